#include "unitrain/checkpoint/hf_folder.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "unitrain/checkpoint/file_image.h"
#include "unitrain/checkpoint/safetensors.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/error.h"
#include "unitrain/core/hf_weight_files.h"
#include "unitrain/core/json_excerpt.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSafetensors = "model.safetensors";
constexpr const char* kSafetensorsIndex = "model.safetensors.index.json";

NamedTensors read_one(const std::string& file, const std::string& key) {
  if (is_safetensors(file)) return read_safetensors(file, key).tensors;
  try {
    return load_tensor_dict(read_file(file), key + " " + file);
  } catch (const TrainError& e) {
    throw ConfigError(e.what());
  }
}

}  // namespace

bool is_hf_weights_folder(const std::string& dir) { return has_hf_weights(dir); }

NamedTensors read_hf_weights(const std::string& dir, const std::string& key) {
  const HfWeightFiles files = hf_weight_files(dir, key);
  if (files.index.empty()) return read_one(files.files.front(), key);
  // Shard after shard, each tensor from the shard the index names for it.
  NamedTensors out;
  for (size_t i = 0; i < files.files.size(); ++i) {
    const std::vector<std::string>& names = files.names[i];
    std::set<std::string> wanted(names.begin(), names.end());
    for (auto& [name, t] : read_one(files.files[i], key)) {
      if (wanted.erase(name)) out.emplace_back(name, std::move(t));
    }
    UT_CHECK(wanted.empty(), key, ": '", files.files[i], "' does not hold ",
             text_excerpt(*wanted.begin()), " (", fs::path(files.index).filename().string(),
             " says it does)");
  }
  return out;
}

std::vector<std::string> write_hf_weights(const std::string& dir, const NamedTensors& tensors,
                                          uint64_t max_shard_bytes) {
  const std::map<std::string, std::string> metadata{{"format", "pt"}};
  std::vector<NamedTensors> shards(1);
  uint64_t total = 0, in_shard = 0;
  for (const auto& [name, t] : tensors) {
    const uint64_t bytes = uint64_t(t.numel()) * uint64_t(t.element_size());
    if (!shards.back().empty() && in_shard + bytes > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().emplace_back(name, t);
    in_shard += bytes;
    total += bytes;
  }
  if (shards.size() == 1) {
    write_safetensors((fs::path(dir) / kSafetensors).string(), tensors, metadata);
    return {kSafetensors};
  }
  std::vector<std::string> files;
  nlohmann::json index;
  index["metadata"]["total_size"] = total;
  index["weight_map"] = nlohmann::json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string file =
        fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, shards.size());
    write_safetensors((fs::path(dir) / file).string(), shards[i], metadata);
    for (const auto& entry : shards[i]) index["weight_map"][entry.first] = file;
    files.push_back(file);
  }
  const std::string text = index.dump(2) + "\n";
  write_synced((fs::path(dir) / kSafetensorsIndex).string(),
               FileImage(std::vector<char>(text.begin(), text.end())));
  files.push_back(kSafetensorsIndex);
  return files;
}

}  // namespace unitrain
