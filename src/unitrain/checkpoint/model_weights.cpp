#include "unitrain/checkpoint/model_weights.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/file_image.h"
#include "unitrain/checkpoint/safetensors.h"
#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"

namespace unitrain {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

/// The longest prefix of `map` that `name` begins with, or null.
const std::pair<std::string, std::string>* longest_prefix(const KeyMap& map,
                                                          const std::string& name) {
  const std::pair<std::string, std::string>* best = nullptr;
  for (const auto& rename : map) {
    if (starts_with(name, rename.first) && (!best || rename.first.size() > best->first.size())) {
      best = &rename;
    }
  }
  return best;
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

NamedTensors read_model_weights(const std::string& path, const std::string& key) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw ConfigError(detail::concat(
        key, ": '", path, "' does not exist",
        fs::path(path).is_relative() ? " (relative to " + fs::current_path(ec).string() + ")" : "",
        "; give a state_dict file, a checkpoint folder or a run's checkpoints/best"));
  }
  try {
    if (!fs::is_directory(path, ec)) {
      if (is_safetensors(path)) return read_safetensors(path, key).tensors;
      return load_tensor_dict(read_file(path), key + " " + path);
    }
    if (!CheckpointStore::has(path, checkpoint_files::kModel)) {
      const bool run_folder = fs::is_directory(fs::path(path) / "checkpoints", ec);
      throw ConfigError(detail::concat(
          key, ": '", path, "' is a folder but not a unitrain checkpoint (no manifest listing ",
          "model.pt)",
          run_folder ? "; it looks like a run folder: give " + path + "/checkpoints/best or " +
                           path + "/checkpoints/last"
                     : ""));
    }
    return load_tensor_dict(CheckpointStore::read(path, checkpoint_files::kModel),
                            key + " " + path + "/" + checkpoint_files::kModel);
  } catch (const TrainError& e) {
    throw ConfigError(e.what());  // bad input, found before training
  }
}

NamedTensors rename_keys(NamedTensors tensors, const KeyMap& map, const std::string& key) {
  std::set<std::string> used;
  std::map<std::string, std::string> renamed_from;  // new name -> old name
  std::vector<std::string> old_names;
  for (auto& [name, tensor] : tensors) {
    old_names.push_back(name);
    if (const auto* rename = longest_prefix(map, name)) {
      used.insert(rename->first);
      name = rename->second + name.substr(rename->first.size());
    }
    const auto [it, fresh] = renamed_from.emplace(name, old_names.back());
    UT_CHECK(fresh, key, ": '", it->second, "' and '", old_names.back(), "' both become '", name,
             "'");
  }
  for (const auto& [from, to] : map) {
    UT_CHECK(used.count(from), key, ": no tensor name begins with ", quoted(from),
             " (the file's names: ", some_names(old_names), ")");
  }
  return tensors;
}

std::string key_map_hint(const std::vector<std::string>& file_names,
                         const std::vector<std::string>& model_names, const std::string& key) {
  const std::set<std::string> in_file(file_names.begin(), file_names.end());
  const std::set<std::string> in_model(model_names.begin(), model_names.end());
  std::vector<std::string> missing, unexpected;
  for (const auto& n : model_names) {
    if (!in_file.count(n)) missing.push_back(n);
  }
  for (const auto& n : file_names) {
    if (!in_model.count(n)) unexpected.push_back(n);
  }
  if (missing.empty() || unexpected.empty()) return "";
  // Candidates: the first missing name against each unexpected one, cut where they start to
  // agree (at a '.' or the whole name). The first that finds every missing name wins.
  const std::string& m0 = missing.front();
  for (const std::string& u : unexpected) {
    size_t common = 0;
    while (common < u.size() && common < m0.size() &&
           u[u.size() - 1 - common] == m0[m0.size() - 1 - common]) {
      ++common;
    }
    if (common == 0) continue;
    // The shared tail starts after a '.' (or is a whole name): whole name parts only.
    size_t tail = common;
    while (tail > 0 && tail < u.size() && tail < m0.size() && u[u.size() - tail - 1] != '.') {
      --tail;
    }
    if (tail == 0) continue;
    const std::string from = u.substr(0, u.size() - tail), to = m0.substr(0, m0.size() - tail);
    const bool all = std::all_of(missing.begin(), missing.end(), [&](const std::string& m) {
      return starts_with(m, to) && in_file.count(from + m.substr(to.size()));
    });
    if (all) {
      return detail::concat("; the file's names start with ", quoted(from), " where the model's ",
                            "start with ", quoted(to), ": set ", key, ": {", quoted(from), ": ",
                            quoted(to), "} to rename them");
    }
  }
  return "";
}

}  // namespace unitrain
