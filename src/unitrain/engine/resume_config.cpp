// What may change between a checkpoint's config and the run resuming from it.
#include "unitrain/engine/resume_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>

#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

void flatten(const YAML::Node& node, const std::string& path, std::map<std::string, std::string>& out) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      const std::string key = kv.first.as<std::string>();
      flatten(kv.second, path.empty() ? key : path + "." + key, out);
    }
  } else if (node.IsSequence() && node.size() > 0 && node[0].IsMap()) {
    for (size_t i = 0; i < node.size(); ++i) flatten(node[i], path + "." + std::to_string(i), out);
  } else if (node.IsScalar()) {
    out[path] = node.Scalar();
  } else {
    YAML::Emitter e;
    e << YAML::Flow << node;
    out[path] = node.IsNull() ? "null" : e.c_str();
  }
}

/// True when `key` is `prefix` or a key inside it.
bool key_under(const std::string& key, const std::string& prefix) {
  return key == prefix || key.rfind(prefix + ".", 0) == 0;
}

/// Keys whose change cannot work with a checkpoint's state, and why.
const char* why_fixed(const std::string& key) {
  auto under = [&key](const char* prefix) { return key_under(key, prefix); };
  if (under("model.type") || under("model.args")) return "the saved weights belong to that model";
  if (under("objective.inputs") || under("objective.predictions")) {
    return "the model's inputs and outputs are fixed";
  }
  if (under("optimizer") && key != "optimizer.lr") {
    return "the saved optimizer state and options belong to that optimizer (only optimizer.lr may "
           "change)";
  }
  if (under("scheduler.type") || under("scheduler.interval")) return "the schedule's state is saved";
  if (under("seed")) return "the data order and random state follow the seed";
  if (under("data.train") || under("data.validation_ratio") || under("data.normalize")) {
    return "the position in the epoch refers to that training data";
  }
  if (under("data.loader.batch_size") || under("data.loader.drop_last") ||
      under("data.loader.shuffle")) {
    return "the position in the epoch refers to those batches";
  }
  if (under("train.accumulation_steps") || under("train.global_batch_size")) {
    return "the position in the accumulation window refers to it";
  }
  return nullptr;
}

}  // namespace

Config read_checkpoint_config(const std::string& dir) {
  const std::vector<char> bytes = CheckpointStore::read(dir, "config.yaml");
  return Config::from_string(std::string(bytes.begin(), bytes.end()), dir + "/config.yaml");
}

bool changes_nothing_trained(const std::string& key) {
  for (const char* p : {"log", "train.threads", "train.max_length", "train.log_every",
                        "data.loader.workers", "data.loader.prefetch", "data.test", "checkpoint",
                        "distributed"}) {
    if (key_under(key, p)) return true;
  }
  return false;
}

std::vector<ConfigChange> check_resume_config(const Config& saved, const Config& current,
                                              const std::string& dir) {
  std::map<std::string, std::string> a, b;
  flatten(saved.node(), "", a);
  flatten(current.node(), "", b);
  using Change = ConfigChange;
  std::vector<Change> all;
  for (const auto& [key, value] : a) {
    auto it = b.find(key);
    if (it == b.end()) {
      all.push_back({key, value, "(unset)"});
    } else if (it->second != value) {
      all.push_back({key, value, it->second});
    }
  }
  for (const auto& [key, value] : b) {
    if (!a.count(key)) all.push_back({key, "(unset)", value});
  }
  // Refuse on the most telling change: a component's `type` before its arguments.
  auto is_type = [](const Change& c) {
    return c.key.size() >= 5 && c.key.compare(c.key.size() - 5, 5, ".type") == 0;
  };
  std::stable_partition(all.begin(), all.end(), is_type);
  for (const Change& c : all) {
    if (const char* why = why_fixed(c.key)) {
      throw ConfigError(fmt::format(
          "cannot resume from {}: {} changed from '{}' to '{}', but {}; restore it, or start a "
          "new run with --name <new-name> (or --checkpoint.resume none to start over here)", dir,
          c.key, c.was, c.now, why));
    }
  }
  return all;
}

}  // namespace unitrain
