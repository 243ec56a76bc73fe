#include "unitrain/core/hf_weight_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "unitrain/core/error.h"
#include "unitrain/core/json_excerpt.h"
#include "unitrain/core/safetensors_header.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSafetensors = "model.safetensors";
constexpr const char* kSafetensorsIndex = "model.safetensors.index.json";
constexpr const char* kBin = "pytorch_model.bin";
constexpr const char* kBinIndex = "pytorch_model.bin.index.json";
/// An index names each tensor once: even a model of a million tensors keeps it under 256 MiB.
constexpr uintmax_t kMaxIndexBytes = uintmax_t(256) << 20;

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

/// The shards `index` names, in the order they first appear, and which tensors each holds.
HfWeightFiles read_index(const fs::path& dir, const fs::path& index, const std::string& key) {
  const std::string where = detail::concat(key, ": '", index.string(), "'");
  std::error_code ec;
  const uintmax_t size = fs::file_size(index, ec);
  UT_CHECK(!ec, where, ": cannot read it: ", ec.message());
  UT_CHECK(size <= kMaxIndexBytes, where, " holds ", size,
           " bytes, more than an index of "
           "tensor names needs (",
           kMaxIndexBytes, "): not a Hugging Face index");
  std::ifstream in(index, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  UT_CHECK(in.good() || in.eof(), where, ": cannot read it");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(detail::concat(where, " is not JSON: ", json_error_text(e)));
  }
  UT_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), where,
           " has no weight_map object (a Hugging Face index maps each tensor's name to its "
           "shard)");
  UT_CHECK(!j["weight_map"].empty(), where, ": its weight_map names no tensor");
  HfWeightFiles out;
  out.index = index.string();
  std::map<std::string, std::set<std::string>> names_of;
  for (const auto& [name, file] : j["weight_map"].items()) {
    UT_CHECK(file.is_string(), where, " maps ", text_excerpt(name), " to ", json_excerpt(file),
             ", not a file name");
    const std::string f = file.get<std::string>();
    UT_CHECK(!f.empty() && f != "." && f != ".." && f.find('/') == std::string::npos, where,
             " maps ", text_excerpt(name), " to '", text_excerpt(f),
             "', not a file in the index's folder");
    if (names_of.find(f) == names_of.end()) out.files.push_back(f);
    names_of[f].insert(name);
  }
  for (std::string& f : out.files) {
    const std::set<std::string>& names = names_of[f];
    const fs::path path = dir / f;
    UT_CHECK(is_file(path), key, ": '", path.string(), "' is missing (", index.filename().string(),
             " names it for ", names.size(), " tensors, e.g. ", text_excerpt(*names.begin()), ")");
    out.names.emplace_back(names.begin(), names.end());
    f = path.string();
  }
  return out;
}

}  // namespace

std::string HfWeightFiles::label() const {
  return fs::path(index.empty() ? files.front() : index).filename().string();
}

bool has_hf_weights(const std::string& dir) {
  for (const char* f : {kSafetensors, kSafetensorsIndex, kBin, kBinIndex}) {
    if (is_file(fs::path(dir) / f)) return true;
  }
  return false;
}

HfWeightFiles hf_weight_files(const std::string& dir, const std::string& key) {
  const fs::path d(dir);
  HfWeightFiles out;
  if (is_file(d / kSafetensors)) {
    out.files = {(d / kSafetensors).string()};
    out.safetensors = true;
  } else if (is_file(d / kSafetensorsIndex)) {
    out = read_index(d, d / kSafetensorsIndex, key);
    out.safetensors = true;
  } else if (is_file(d / kBin)) {
    out.files = {(d / kBin).string()};
  } else if (is_file(d / kBinIndex)) {
    out = read_index(d, d / kBinIndex, key);
  } else {
    throw ConfigError(detail::concat(key, ": '", dir, "' holds no weights (", kSafetensors, ", ",
                                     kSafetensorsIndex, " or ", kBin, ")"));
  }
  return out;
}

std::vector<HfTensorHeader> hf_weight_headers(const HfWeightFiles& files, const std::string& key) {
  std::vector<HfTensorHeader> out;
  if (!files.safetensors) return out;
  for (size_t i = 0; i < files.files.size(); ++i) {
    const std::string& path = files.files[i];
    const std::string file = fs::path(path).filename().string();
    std::set<std::string> held;
    for (const SafetensorsEntry& e : read_safetensors_header(path, key).entries) {
      held.insert(e.name);
      if (!files.index.empty() &&
          !std::binary_search(files.names[i].begin(), files.names[i].end(), e.name)) {
        continue;  // the index puts it elsewhere (or nowhere): not this file's to give
      }
      out.push_back({file, e.name, e.dtype->dtype, e.shape});
    }
    if (files.index.empty()) continue;
    for (const std::string& name : files.names[i]) {
      UT_CHECK(held.count(name), key, ": '", path, "' does not hold ", text_excerpt(name), " (",
               fs::path(files.index).filename().string(), " says it does)");
    }
  }
  return out;
}

}  // namespace unitrain
