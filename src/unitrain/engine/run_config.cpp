#include "unitrain/engine/run_config.h"

#include <regex>

#include "unitrain/checkpoint/checkpoint_options.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/parallel/distributed_options.h"
#include "unitrain/core/registry.h"
#include "unitrain/data/build_data.h"
#include "unitrain/data/loader.h"
#include "unitrain/engine/train_options.h"
#include "unitrain/log/log_options.h"
#include "unitrain/models/model.h"
#include "unitrain/objective/objective_module.h"
#include "unitrain/optim/optimizer.h"
#include "unitrain/optim/scheduler.h"
#include "unitrain/profile/profile_options.h"

namespace unitrain {
namespace {

// Replaces ${a.b} in every string scalar by the scalar at key path a.b of `root`.
void interpolate(YAML::Node node, const Config& root, const std::string& path, int depth = 0) {
  if (node.IsMap()) {
    for (auto kv : node) {
      interpolate(kv.second, root, path.empty() ? kv.first.as<std::string>()
                                                : path + "." + kv.first.as<std::string>(), depth);
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
      out += target.Scalar();
      begin = m[0].second;
    }
    out.append(begin, text.cend());
    node = out;
  }
}

}  // namespace

std::shared_ptr<const Schema> run_schema() {
  static auto s = [] {
    auto s = std::make_shared<Schema>();
    s->add("name", Type::String).def("run").help("the run's name; used in run_dir");
    s->add("seed", Type::Int)
        .def(42)
        .min(0)
        .fixed("the data order and random state follow the seed")
        .help(
            "seeds model init, data order and dropout: the same seed gives the same run bit for "
            "bit");
    s->add("run_dir", Type::String).def("runs/${name}").help(
        "where config.yaml, metrics.jsonl/.csv and train.log are written; ${key} refers to other keys");
    s->add("model", Type::Section)
        .component("model")
        .nullable()
        .section(model_section_schema())
        .fixed("the saved weights belong to that model")
        .help("the model to train (config-driven runs)");
    s->add("objective", Type::Section).section(objective_section_schema()).help(
        "how the model's predictions become losses and metrics (config-driven runs)");
    s->add("data", Type::Section).section(data_section_schema()).help("datasets and the loader");
    s->add("optimizer", Type::Section)
        .component("optimizer", "adam")
        .section(optimizer_section_schema())
        .fixed(
            "the saved optimizer state and options belong to that optimizer (only "
            "optimizer.lr may change)")
        .help("the optimizer");
    s->add("scheduler", Type::Section)
        .component("scheduler", "constant")
        .section(scheduler_section_schema())
        .fixed_type("the schedule's state is saved")
        .help("the learning-rate schedule");
    s->add("train", Type::Section).section(TrainOptions::schema()).help("the training loop");
    s->add("log", Type::Section).section(LogOptions::schema()).harmless().help("logging");
    s->add("checkpoint", Type::Section)
        .section(CheckpointOptions::schema())
        .harmless()
        .help("checkpoints in run_dir/checkpoints and resuming from them");
    s->add("early_stopping", Type::Section).section(EarlyStoppingOptions::schema()).help(
        "stop when a validation metric stops improving");
    s->add("profile", Type::Section)
        .section(ProfileOptions::schema())
        .harmless()
        .help("the profiler: which optimizer steps it records (PyTorch's schedule words)");
    s->add("callbacks", Type::SectionList)
        .component("callback")
        .section(std::make_shared<Schema>())
        .def("[]")
        .free()
        .help("callbacks run at the loop's hook points, in order: [{type: ema, args: {...}}]; "
              "unitrain list callbacks");
    s->add("distributed", Type::Section)
        .section(DistributedOptions::schema())
        .harmless()
        .help(
            "data-parallel training over several processes (started by unitrain launch, torchrun, "
            "mpirun or srun)");
    s->add("user", Type::Any).def("{}").help(
        "free-form keys for your own code (library users); not validated");
    return s;
  }();
  return s;
}

Config resolve_run_config(const Config& raw) {
  register_builtins();
  Config resolved = run_schema()->resolve(raw);
  interpolate(resolved.node(), resolved.clone(), "");
  Config log = resolved.at("log");
  LogOptions::resolve_trackers(log);  // names against the tracker registry, their settings
  return resolved;
}

Config load_run_config(const std::vector<std::string>& files, const Overrides& overrides) {
  Config merged;
  for (const auto& f : files) merged.merge(Config::from_file(f));
  for (const auto& [key, value] : overrides) merged.set(key, value);
  return resolve_run_config(merged);
}

std::string new_run_option(const Config& resolved) {
  const std::string name = resolved.get_string("name");
  if (resolved.get_string("run_dir") == "runs/" + name) {
    return "--name <new-name> (its run_dir becomes runs/<new-name>)";
  }
  return "--run_dir <new-folder> (run_dir is set to " + resolved.get_string("run_dir") +
         ", so --name does not change the folder)";
}

std::string config_reference_markdown() {
  register_builtins();
  std::string md =
      "# Configuration reference\n\n"
      "Generated by `unitrain config --reference` from the declarations in the code: every key,\n"
      "its type, default, allowed values and meaning. Durations are written `10 epochs`,\n"
      "`500 steps` or `20000 samples` (short: `10ep`, `500st`, `20000sa`). Precedence: built-in\n"
      "defaults < YAML file < command line (`--optimizer.lr 3e-4` or `--set "
      "optimizer.lr=3e-4`).\n\n"
      "The column *on resume* says what a run resumed from a checkpoint may do with a key whose\n"
      "value differs from the checkpoint's config: **fixed** keys may not change (the resume is\n"
      "refused, naming the key: the saved state depends on them); **free** keys may change, from\n"
      "the resume on (a finished run is not re-opened by such a change: it would train nothing);\n"
      "**harmless** keys change nothing trained (logging, threads, checkpoint writing), so a\n"
      "finished run stays finished. A component's `args` follow its section.\n\n"
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
