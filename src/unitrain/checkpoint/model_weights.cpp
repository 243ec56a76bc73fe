#include "unitrain/checkpoint/model_weights.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/file_image.h"
#include "unitrain/checkpoint/hf_folder.h"
#include "unitrain/checkpoint/model_shards.h"
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
        "; give a state_dict file, a checkpoint folder, a run's checkpoints/best or a Hugging "
        "Face folder"));
  }
  try {
    if (!fs::is_directory(path, ec)) {
      if (is_safetensors(path)) return read_safetensors(path, key).tensors;
      return load_tensor_dict(read_file(path), key + " " + path);
    }
    if (is_hf_weights_folder(path)) return read_hf_weights(path, key);
    // distributed.zero: 3 saved the model in parts, one per rank: merged here.
    if (has_model_shards(path)) return read_model_state(path);
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

namespace {

/// A prefix rename of one file name `u` into one model name `m`: what precedes the longest
/// tail of whole name parts they share (a tail that starts the name or follows a '.' in both).
struct Rename {
  std::string from, to;
  size_t tail = 0;  ///< the shared tail's length: the longer, the likelier
};

std::optional<Rename> rename_between(const std::string& u, const std::string& m) {
  size_t common = 0;
  while (common < u.size() && common < m.size() &&
         u[u.size() - 1 - common] == m[m.size() - 1 - common]) {
    ++common;
  }
  const auto starts_part = [](const std::string& s, size_t tail) {
    return tail == s.size() || s[s.size() - tail - 1] == '.';
  };
  size_t tail = common;
  while (tail > 0 && !(starts_part(u, tail) && starts_part(m, tail))) --tail;
  if (tail == 0) return std::nullopt;
  return Rename{u.substr(0, u.size() - tail), m.substr(0, m.size() - tail), tail};
}

}  // namespace

std::string key_map_hint(
    const std::vector<std::string>& file_names, const std::vector<std::string>& model_names,
    const std::string& key,
    const std::function<bool(const std::string& file_name, const std::string& model_name)>& fits) {
  const std::set<std::string> in_file(file_names.begin(), file_names.end());
  const std::set<std::string> in_model(model_names.begin(), model_names.end());
  std::vector<std::string> missing;
  std::set<std::string> unexpected;
  for (const auto& n : model_names) {
    if (!in_file.count(n)) missing.push_back(n);
  }
  for (const auto& n : file_names) {
    if (!in_model.count(n)) unexpected.insert(n);
  }
  if (missing.empty() || unexpected.empty()) return "";
  // Candidates: for each missing name, the renames from the unexpected names that share the
  // longest tail with it. Each candidate explains the missing names it would bring from the
  // file; the best explain most (then with the longest tails), and the renames chosen take
  // disjoint names (a file's name becomes one model name) until every missing name is found.
  struct Candidate {
    Rename rename;
    std::vector<std::string> explains, takes;  // missing names found; file names used
    size_t tails = 0;
  };
  std::map<std::pair<std::string, std::string>, Candidate> candidates;
  for (const std::string& m : missing) {
    std::vector<Rename> best;
    for (const std::string& u : unexpected) {
      const auto r = rename_between(u, m);
      if (!r || (!best.empty() && r->tail < best.front().tail)) continue;
      if (!best.empty() && r->tail > best.front().tail) best.clear();
      best.push_back(*r);
    }
    for (const Rename& r : best) candidates[{r.from, r.to}].rename = r;
  }
  std::vector<Candidate> ranked;
  for (auto& [pair, c] : candidates) {
    for (const std::string& m : missing) {
      if (!starts_with(m, c.rename.to)) continue;
      const std::string u = c.rename.from + m.substr(c.rename.to.size());
      if (!unexpected.count(u) || (fits && !fits(u, m))) continue;
      c.explains.push_back(m);
      c.takes.push_back(u);
      c.tails += m.size() - c.rename.to.size();
    }
    ranked.push_back(std::move(c));
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Candidate& a, const Candidate& b) {
    if (a.explains.size() != b.explains.size()) return a.explains.size() > b.explains.size();
    return a.tails > b.tails;
  });
  std::set<std::string> found, taken;
  KeyMap map;
  for (const Candidate& c : ranked) {
    const auto clash = [](const std::vector<std::string>& names, const std::set<std::string>& s) {
      return std::any_of(names.begin(), names.end(), [&](const auto& n) { return s.count(n); });
    };
    if (c.explains.empty() || clash(c.explains, found) || clash(c.takes, taken)) continue;
    map.emplace_back(c.rename.from, c.rename.to);
    found.insert(c.explains.begin(), c.explains.end());
    taken.insert(c.takes.begin(), c.takes.end());
  }
  // The map as rename_keys applies it (the longest prefix wins) must bring every missing name,
  // keep every name that fits already and make no two names one.
  std::set<std::string> renamed;
  for (const std::string& u : file_names) {
    const auto* r = longest_prefix(map, u);
    renamed.insert(r ? r->second + u.substr(r->first.size()) : u);
  }
  const bool all = renamed.size() == in_file.size() &&
                   std::all_of(model_names.begin(), model_names.end(),
                               [&](const std::string& m) { return renamed.count(m) > 0; });
  if (map.empty() || !all) return "";
  std::sort(map.begin(), map.end());
  if (map.size() == 1) {
    const auto& [from, to] = map.front();
    return detail::concat("; the file's names start with ", quoted(from), " where the model's ",
                          "start with ", quoted(to), ": set ", key, ": {", quoted(from), ": ",
                          quoted(to), "} to rename them");
  }
  std::string where, value;
  for (const auto& [from, to] : map) {
    where += detail::concat(where.empty() ? "" : ", ", quoted(from), " where the model's have ",
                            quoted(to));
    value += detail::concat(value.empty() ? "" : ", ", quoted(from), ": ", quoted(to));
  }
  return detail::concat("; the file's names start with other prefixes than the model's (", where,
                        "): set ", key, ": {", value, "} to rename them");
}

}  // namespace unitrain
