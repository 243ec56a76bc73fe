#include "unitrain/engine/checkpoints/rank_files.h"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>

#include "unitrain/checkpoint/file_image.h"
#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {

std::vector<CheckpointFile> write_rank_files(ProcessGroup& group, const std::string& root,
                                             int64_t step, const std::string& kind,
                                             const std::string& what,
                                             const std::function<std::string(int)>& name_of,
                                             const std::function<std::vector<char>()>& make) {
  std::string mine;
  if (group.rank() != 0) {
    const std::string path = fmt::format("{}/.partial-{}-step-{}-rank-{}-{}.pt", root, kind, step,
                                         group.rank(), CheckpointStore::writer_tag());
    try {
      std::error_code ec;
      std::filesystem::create_directories(root, ec);
      const FileImage image(make());
      write_synced(path, image);
      mine = fmt::format("{}\n{}\n{}", image.size(), crc32_of(image), path);
    } catch (const std::exception& e) {
      mine = "!" + error_text(e);
    }
  }
  const std::vector<std::string> all = group.all_gather(mine);
  std::vector<CheckpointFile> out;
  for (int r = 1; r < group.world_size(); ++r) {
    const std::string& said = all[static_cast<size_t>(r)];
    UT_CHECK_TRAIN(said.empty() || said[0] != '!', "rank ", r, " could not write its ", what,
                   " for the checkpoint of step ", step, ": ", said.substr(1));
    std::istringstream in(said);
    CheckpointFile f;
    f.name = name_of(r);
    std::string size, crc;
    std::getline(in, size);
    std::getline(in, crc);
    std::getline(in, f.move_from);
    f.moved_size = std::stoull(size);
    f.moved_crc32 = static_cast<uint32_t>(std::stoul(crc));
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace unitrain
