#include "unitrain/report/checkpoint_list.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/trainer_state_file.h"
#include "unitrain/report/json_read.h"

namespace unitrain::report {
namespace {

namespace fs = std::filesystem;

/// The step of a folder name "step-<S>", or -1.
int64_t step_of_folder(const std::string& name) {
  const std::string prefix = "step-";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string digits = name.substr(prefix.size());
  if (digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return -1;
  }
  return std::stoll(digits);
}

/// The folder name a link (checkpoints/last, checkpoints/best) points at, or "".
std::string link_target(const fs::path& link) {
  std::error_code ec;
  if (!fs::is_symlink(link, ec)) return "";
  const fs::path target = fs::read_symlink(link, ec);
  return ec ? "" : target.filename().string();
}

void read_state(const fs::path& file, CheckpointInfo& c, std::vector<std::string>& notes) {
  const auto text = read_text_file(file.string());
  if (!text) {
    notes.push_back(file.string() + " is missing");
    return;
  }
  try {
    const TrainerStateFile f = TrainerStateFile::parse(*text, file.string());
    c.epoch = f.state.epoch;
    c.samples = f.state.samples;
    for (const auto* split : {&f.last_train, &f.last_val}) {
      for (const auto& [k, v] : *split) c.metrics[k] = v;
    }
  } catch (const std::exception& e) {
    notes.push_back(e.what());
  }
}

}  // namespace

std::vector<CheckpointInfo> read_checkpoints(const std::string& run_dir,
                                             std::vector<std::string>& notes) {
  std::vector<CheckpointInfo> out;
  const fs::path root = fs::path(run_dir) / "checkpoints";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  const std::string last = link_target(root / "last"), best = link_target(root / "best");
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    const int64_t step = step_of_folder(name);
    if (step < 0 || entry.is_symlink() || !entry.is_directory()) continue;
    CheckpointInfo c;
    c.name = name;
    c.step = step;
    c.complete = fs::exists(entry.path() / "MANIFEST.json");
    c.last = name == last;
    c.best = name == best;
    if (c.complete) read_state(entry.path() / checkpoint_files::kTrainerState, c, notes);
    out.push_back(c);
  }
  if (ec) notes.push_back("cannot list " + root.string() + ": " + ec.message());
  std::sort(out.begin(), out.end(),
            [](const CheckpointInfo& a, const CheckpointInfo& b) { return a.step < b.step; });
  return out;
}

}  // namespace unitrain::report
