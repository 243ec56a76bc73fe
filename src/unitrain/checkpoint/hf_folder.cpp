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

namespace unitrain {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSafetensors = "model.safetensors";
constexpr const char* kSafetensorsIndex = "model.safetensors.index.json";
constexpr const char* kBin = "pytorch_model.bin";
constexpr const char* kBinIndex = "pytorch_model.bin.index.json";

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

NamedTensors read_one(const fs::path& file, const std::string& key) {
  if (is_safetensors(file.string())) return read_safetensors(file.string(), key).tensors;
  try {
    return load_tensor_dict(read_file(file.string()), key + " " + file.string());
  } catch (const TrainError& e) {
    throw ConfigError(e.what());
  }
}

/// The shards an index names, in the order they first appear, and which tensors each holds.
NamedTensors read_sharded(const fs::path& dir, const fs::path& index, const std::string& key) {
  nlohmann::json j;
  try {
    const std::vector<char> bytes = read_file(index.string());
    j = nlohmann::json::parse(bytes.begin(), bytes.end());
  } catch (const TrainError& e) {
    throw ConfigError(e.what());
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(fmt::format("{}: '{}' is not JSON: {}", key, index.string(), e.what()));
  }
  UT_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), key, ": '",
           index.string(), "' has no weight_map object (a Hugging Face index maps each tensor's "
           "name to its shard)");
  std::vector<std::string> files;
  std::map<std::string, std::set<std::string>> names_of;
  for (const auto& [name, file] : j["weight_map"].items()) {
    UT_CHECK(file.is_string(), key, ": '", index.string(), "' maps ", name, " to ", file.dump(),
             ", not a file name");
    const std::string f = file.get<std::string>();
    UT_CHECK(f.find('/') == std::string::npos, key, ": '", index.string(), "' maps ", name,
             " to '", f, "', outside the folder");
    if (names_of.find(f) == names_of.end()) files.push_back(f);
    names_of[f].insert(name);
  }
  NamedTensors out;
  for (const std::string& f : files) {
    UT_CHECK(is_file(dir / f), key, ": '", (dir / f).string(), "' is missing (",
             index.filename().string(), " names it for ", names_of[f].size(), " tensors)");
    std::set<std::string> wanted = names_of[f];
    for (auto& [name, t] : read_one(dir / f, key)) {
      if (wanted.erase(name)) out.emplace_back(name, std::move(t));
    }
    UT_CHECK(wanted.empty(), key, ": '", (dir / f).string(), "' does not hold ", *wanted.begin(),
             " (", index.filename().string(), " says it does)");
  }
  return out;
}

}  // namespace

bool is_hf_weights_folder(const std::string& dir) {
  for (const char* f : {kSafetensors, kSafetensorsIndex, kBin, kBinIndex}) {
    if (is_file(fs::path(dir) / f)) return true;
  }
  return false;
}

NamedTensors read_hf_weights(const std::string& dir, const std::string& key) {
  const fs::path d(dir);
  if (is_file(d / kSafetensors)) return read_one(d / kSafetensors, key);
  if (is_file(d / kSafetensorsIndex)) return read_sharded(d, d / kSafetensorsIndex, key);
  if (is_file(d / kBin)) return read_one(d / kBin, key);
  if (is_file(d / kBinIndex)) return read_sharded(d, d / kBinIndex, key);
  throw ConfigError(fmt::format("{}: '{}' holds no weights (model.safetensors, {} or {})", key,
                                dir, kSafetensorsIndex, kBin));
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
