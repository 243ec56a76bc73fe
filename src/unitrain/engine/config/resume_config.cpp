// What may change between a checkpoint's config and the run resuming from it.
#include "unitrain/engine/config/resume_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/config/load_config.h"

namespace unitrain {
namespace {

void flatten(const YAML::Node& node, const std::string& path,
             std::map<std::string, std::string>& out) {
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

}  // namespace

Config read_checkpoint_config(const std::string& dir) {
  const std::vector<char> bytes = CheckpointStore::read(dir, checkpoint_files::kConfig);
  return Config::from_string(std::string(bytes.begin(), bytes.end()),
                             dir + "/" + checkpoint_files::kConfig);
}

bool changes_nothing_trained(const std::string& key) {
  return run_schema()->resume_rule(key).on == OnResume::Harmless;
}

std::vector<ConfigChange> config_differences(const Config& was, const Config& now) {
  std::map<std::string, std::string> a, b;
  flatten(was.node(), "", a);
  flatten(now.node(), "", b);
  std::vector<ConfigChange> all;
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
  return all;
}

std::vector<ConfigChange> check_resume_config(const Config& saved, const Config& current,
                                              const std::string& dir) {
  using Change = ConfigChange;
  std::vector<Change> all = config_differences(saved, current);
  // Refuse on the most telling change: a component's `type` before its arguments.
  auto is_type = [](const Change& c) {
    return c.key.size() >= 5 && c.key.compare(c.key.size() - 5, 5, ".type") == 0;
  };
  std::stable_partition(all.begin(), all.end(), is_type);
  const auto schema = run_schema();
  for (const Change& c : all) {
    const ResumeRule rule = schema->resume_rule(c.key);
    if (rule.on == OnResume::Fixed) {
      throw ConfigError(fmt::format(
          "cannot resume from {}: {} changed from '{}' to '{}', but {}; restore it, or start a "
          "new run with {} (or --checkpoint.resume none to start over here)",
          dir, c.key, c.was, c.now, rule.why, new_run_option(current)));
    }
  }
  return all;
}

ResumePoint read_resume_point(const std::string& dir, const Config& current) {
  ResumePoint r;
  if (dir.empty()) return r;
  r.dir = dir;
  r.config_changes = check_resume_config(read_checkpoint_config(dir), current, dir);
  r.file = TrainerStateFile::read(dir);
  return r;
}

}  // namespace unitrain
