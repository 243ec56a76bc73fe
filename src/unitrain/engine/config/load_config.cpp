#include "unitrain/engine/config/load_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <regex>

#include "unitrain/core/error.h"
#include "unitrain/core/registry.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/log/console.h"
#include "unitrain/log/log_options.h"

namespace unitrain {
namespace {

// Replaces ${a.b} in every string scalar by the scalar at key path a.b of `root`.
// `root` records each referenced key as read.
void interpolate(YAML::Node node, const Config& root, const std::string& path, int depth = 0) {
  if (node.IsMap()) {
    for (auto kv : node) {
      interpolate(
          kv.second, root,
          path.empty() ? kv.first.as<std::string>() : path + "." + kv.first.as<std::string>(),
          depth);
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      interpolate(node[i], root, path + "." + std::to_string(i), depth);
    }
  } else if (node.IsScalar() && node.Scalar().find("${") != std::string::npos) {
    static const std::regex ref(R"(\$\{([A-Za-z0-9_.]+)\})");
    std::string text = node.Scalar(), out;
    std::smatch m;
    auto begin = text.cbegin();
    while (std::regex_search(begin, text.cend(), m, ref)) {
      out.append(begin, m[0].first);
      YAML::Node target = YAML::Clone(root.node());
      for (size_t start = 0, dot;; start = dot + 1) {
        dot = m[1].str().find('.', start);
        std::string part = m[1].str().substr(start, dot - start);
        UT_CHECK(target.IsMap() && target[part].IsDefined() && !target[part].IsNull(), path,
                 ": '${", m[1].str(), "}' refers to a key that is not set");
        target.reset(target[part]);
        if (dot == std::string::npos) break;
      }
      UT_CHECK(target.IsScalar(), path, ": '${", m[1].str(), "}' is not a single value");
      root.mark_read(m[1].str());
      out += target.Scalar();
      begin = m[0].second;
    }
    out.append(begin, text.cend());
    node = out;
  }
}

}  // namespace

std::shared_ptr<const Schema> run_schema() { return options_of<RunSettings>().schema(); }

Config resolve_run_config(const Config& raw) {
  register_builtins();
  Config resolved = run_schema()->resolve(raw);
  if (!resolved.key_reads()) {  // the keys `raw` sets are the ones given (see unread_keys)
    Config given = raw;
    given.track_reads();
    resolved.share_reads(given);
  }
  interpolate(resolved.node(), resolved.clone(), "");  // the clone shares the record of reads
  Config log = resolved.at("log");
  LogOptions::resolve_trackers(log);  // names against the tracker registry, their settings
  resolved.mark_read("user");         // free-form keys for the program's own code, read as it likes
  return resolved;
}

namespace {

/// The sections only a config-driven run reads (train_from_config checks them before it makes
/// a Trainer): a program that builds its own module does not use them.
constexpr const char* kModelSections[] = {"model", "objective"};

/// `config` without kModelSections.
Config without_model_sections(const Config& config) {
  Config out = config.clone();
  for (const char* key : kModelSections) {
    if (out.node().IsMap()) out.node().remove(key);
  }
  return out;
}

}  // namespace

/// The run's config resolved for fit(). A program that builds its own module never reads the
/// model or objective section, so one it got wrong (a model's required argument missing) does
/// not stop it: those sections are kept as given, with a warning naming the error; anything
/// else wrong is the error it was.
Config resolve_program_config(const Config& config) {
  try {
    return resolve_run_config(config);
  } catch (const ConfigError& e) {
    Config resolved;
    try {
      resolved = resolve_run_config(without_model_sections(config));
    } catch (const ConfigError&) {
      throw e;
    }
    for (const char* key : kModelSections) {
      if (config.node().IsMap() && config.node()[key])
        resolved.node()[key] = YAML::Clone(config.node()[key]);
    }
    log::warn(
        fmt::format("{} (the model and objective sections are for config-driven runs: a "
                    "program that builds its own module does not use them; they are kept "
                    "as given)",
                    e.what()));
    return resolved;
  }
}

/// RunSettings of a config resolve_program_config made: without the model sections when they
/// are the ones kept as given.
RunSettings program_settings(const Config& config) {
  try {
    return RunSettings::from_config(config);
  } catch (const ConfigError& e) {
    try {
      return RunSettings::from_config(without_model_sections(config));
    } catch (const ConfigError&) {
      throw e;
    }
  }
}

Config load_run_config(const std::vector<std::string>& files, const Overrides& overrides) {
  Config merged;
  for (const auto& f : files) {
    Config file = Config::from_file(f);
    // A sweep file (base: and space:) where a run's config belongs: said as such, not as its
    // first unknown key.
    UT_CHECK(!(file.node()["base"].IsDefined() && file.node()["space"].IsDefined()), f,
             " is a sweep file (it has base: and space:), not a run's config: run it with "
             "`unitrain sweep ",
             f, "`, or train its base (", file.node()["base"].as<std::string>(""),
             ") with `unitrain train`");
    merged.merge(file);
  }
  for (const auto& [key, value] : overrides) merged.set(key, value);
  return resolve_run_config(merged);
}

std::string new_run_option(const Config& resolved) {
  const RunSettings run = RunSettings::from_config(resolved);
  if (run.run_dir == "runs/" + run.name) {
    return "--name <new-name> (its run_dir becomes runs/<new-name>)";
  }
  return "--run_dir <new-folder> (run_dir is set to " + run.run_dir +
         ", so --name does not change the folder)";
}

std::vector<std::string> warn_unread_keys(const Config& config) {
  const std::vector<std::string> unread = config.unread_keys();
  if (unread.empty() || !config.key_reads()->first_warning()) return {};
  log::warn(fmt::format(
      "config keys that nothing in this program read, so they changed nothing: {} (a program "
      "that builds its own model and data does not use model, objective or data's datasets; "
      "remove them, or read them in your code)",
      fmt::join(unread, ", ")));
  return unread;
}

std::string config_reference_markdown() {
  register_builtins();
  std::string md =
      "# Configuration reference\n\n"
      "Generated by `unitrain config --reference` from the declarations in the code: every key,\n"
      "its type, default, allowed values and meaning. Durations are written `10 epochs`,\n"
      "`500 steps` or `20000 samples` (short: `10ep`, `500st`, `20000sa`); epochs may be a\n"
      "fraction (`0.5 epochs`: a period then ends at the first step past each half epoch).\n"
      "Precedence: built-in defaults < YAML file < command line (`--optimizer.lr 3e-4` or `--set "
      "optimizer.lr=3e-4`).\n\n"
      "The column *on resume* says what a run resumed from a checkpoint may do with a key whose\n"
      "value differs from the checkpoint's config: **fixed** keys may not change (the resume is\n"
      "refused, naming the key: the saved state depends on them); **free** keys may change, from\n"
      "the resume on (a finished run is not re-opened by such a change: it would train nothing);\n"
      "**harmless** keys change nothing trained (logging, checkpoint writing; `train.threads`\n"
      "only the last bits of sums, and a resume that changes it says so), so a finished run\n"
      "stays finished. A component's `args` follow its section.\n\n"
      "## Run\n\n| key | type | default | allowed | on resume | meaning |\n"
      "|---|---|---|---|---|---|\n";
  md += run_schema()->markdown("", ResumeRule{});
  for (const auto& kind : catalog::kinds()) {
    md += "\n## Components: " + kind + "\n";
    for (const auto* info : catalog::of_kind(kind)) {
      md += "\n### " + kind + " `" + info->name + "`\n\n" + info->help + "\n\n";
      if (info->args->fields().empty()) {
        md += "No arguments.\n";
      } else {
        md += "| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n";
        md += info->args->markdown("args");
      }
    }
  }
  return md;
}

}  // namespace unitrain

namespace unitrain {

Overrides parse_overrides(const std::vector<std::string>& words) {
  Overrides out;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    UT_CHECK(w.rfind("--", 0) == 0 && w.size() > 2, "unexpected argument '", w,
             "'; overrides look like --optimizer.lr 3e-4 or --set optimizer.lr=3e-4");
    std::string key = w.substr(2), value;
    bool is_set = key == "set";
    if (is_set) {
      UT_CHECK(i + 1 < words.size(), "--set needs key.path=value");
      key = words[++i];
    }
    auto eq = key.find('=');
    if (eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else {
      UT_CHECK(!is_set, "--set ", key, ": write --set ", key, "=value");
      UT_CHECK(i + 1 < words.size(), "override --", key, " has no value; write --", key, " VALUE");
      // `--foo --run_dir X`: --foo has no value (a value may start with one dash: -0.1).
      const std::string& next = words[i + 1];
      UT_CHECK(next.rfind("--", 0) != 0 || next.size() == 2, "override --", key,
               " has no value (the next word is the option ", next, "); write --", key,
               " VALUE, or --", key, "=VALUE for a value starting with --");
      value = words[++i];
    }
    UT_CHECK(!key.empty(), "override '", w, "' has no key");
    out.emplace_back(key, value);
  }
  return out;
}

}  // namespace unitrain
