// unitrain: the command line. Parses arguments and calls the library; nothing else.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "unitrain/core/error.h"
#include "unitrain/core/plugin.h"
#include "unitrain/core/registry.h"
#include "unitrain/engine/config_run.h"
#include "unitrain/engine/run_config.h"
#include "unitrain/launch/launcher.h"
#include "unitrain/log/console.h"
#include "unitrain/log/console_tracker.h"

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

struct ConfigArgs {
  std::string file;
  std::vector<std::string> plugins;
};

void add_config_args(CLI::App* cmd, ConfigArgs& args, bool required) {
  cmd->add_option("config", args.file, "the run's YAML file")->required(required);
  cmd->add_option("--plugin", args.plugins,
                  "a shared library (.so) registering more components; repeatable");
  cmd->allow_extras();
  cmd->footer(
      "Any key of the config can be overridden after the file: --optimizer.lr 3e-4, "
      "--train.max_length '2 epochs', or --set model.args.sizes=[64,10]. "
      "Precedence: built-in defaults < YAML < command line.");
}

unitrain::Config resolve(const ConfigArgs& args, const CLI::App* cmd) {
  unitrain::register_builtins();
  for (const auto& p : args.plugins) unitrain::load_plugin(p);
  return unitrain::load_run_config({args.file}, unitrain::parse_overrides(cmd->remaining()));
}

std::string self_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw unitrain::TrainError("launch: cannot find the unitrain executable: " + ec.message());
  return p.string();
}

/// run_dir/logs of `train CONFIG [overrides]`, or "logs" when the config does not resolve
/// (the workers will report why).
std::string default_log_dir(const std::vector<std::string>& worker_args) {
  if (worker_args.size() < 2 || worker_args[0] != "train") return "logs";
  try {
    unitrain::register_builtins();
    std::vector<std::string> overrides(worker_args.begin() + 2, worker_args.end());
    return unitrain::load_run_config({worker_args[1]}, unitrain::parse_overrides(overrides))
               .get_string("run_dir") +
           "/logs";
  } catch (const std::exception&) {
    return "logs";
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"unitrain: train any LibTorch model from a YAML file or a few lines of C++"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "unitrain 0.1.0");

  ConfigArgs train_args, config_args, list_args;
  CLI::App* train = app.add_subcommand("train", "train the model a YAML file describes");
  add_config_args(train, train_args, true);

  CLI::App* config = app.add_subcommand(
      "config", "print the fully resolved config (every default filled in) and exit");
  add_config_args(config, config_args, false);
  bool reference = false;
  config->add_flag("--reference", reference,
                   "print the reference of every key and component as Markdown (docs/config.md)");

  ConfigArgs eval_args;
  std::string eval_checkpoint = "best", eval_split = "val";
  CLI::App* eval = app.add_subcommand(
      "eval", "evaluate a checkpoint on the val or test split; writes run_dir/results/<split>.json");
  add_config_args(eval, eval_args, true);
  eval->add_option("--checkpoint", eval_checkpoint,
                   "best, last, or a checkpoint folder (run_dir/checkpoints/step-<S>); default best, "
                   "else last when the run kept no best")
      ->capture_default_str();
  eval->add_option("--split", eval_split, "val or test")->capture_default_str();

  ConfigArgs export_args;
  std::string export_checkpoint = "last", export_format = "state_dict", export_out;
  CLI::App* exp = app.add_subcommand(
      "export", "write a checkpoint's model as a state dict (torch.load) or TorchScript (torch.jit.load)");
  add_config_args(exp, export_args, true);
  exp->add_option("--checkpoint", export_checkpoint, "best, last, or a checkpoint folder")
      ->capture_default_str();
  exp->add_option("--format", export_format,
                  "state_dict (a dict of tensors named as the model's state_dict()) or torchscript "
                  "(built-in and TorchScript models)")
      ->capture_default_str();
  exp->add_option("--out", export_out, "the file to write")->required();

  unitrain::LaunchOptions launch_options;
  std::string launch_log_dir;
  bool launch_exec = false;
  CLI::App* launch = app.add_subcommand(
      "launch",
      "start this machine's workers of a distributed run, e.g. unitrain launch --nproc-per-node 2 "
      "-- train run.yaml [overrides]");
  launch->add_option("--nproc-per-node", launch_options.nproc_per_node, "workers on this machine")
      ->capture_default_str();
  launch->add_option("--nnodes", launch_options.nnodes, "machines in the run")->capture_default_str();
  launch->add_option("--node-rank", launch_options.node_rank, "this machine's index, 0..nnodes-1")
      ->capture_default_str();
  launch->add_option("--master-addr", launch_options.master_addr,
                     "address of machine 0 (it hosts the rendezvous)")
      ->capture_default_str();
  launch->add_option("--master-port", launch_options.master_port, "port of the rendezvous")
      ->capture_default_str();
  launch->add_option("--max-restarts", launch_options.max_restarts,
                     "restart the workers this many times after a failure (they resume from the "
                     "last checkpoint)")
      ->capture_default_str();
  launch->add_option("--grace-period", launch_options.grace_seconds,
                     "seconds between SIGTERM and SIGKILL when ending the other workers")
      ->capture_default_str();
  launch->add_option("--log-dir", launch_log_dir,
                     "where rank-<R>.log files go; default run_dir/logs of the train config");
  launch->add_flag("--exec", launch_exec,
                   "run the command after -- as a program, not as a unitrain subcommand");
  std::vector<std::string> launch_command;
  launch->add_option("command", launch_command,
                     "after --: each worker's command, e.g. -- train run.yaml --optimizer.lr 1e-3");

  CLI::App* list = app.add_subcommand("list", "list every registered component by kind");
  list->add_option("--plugin", list_args.plugins, "a plugin (.so) to load first; repeatable");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  try {
    if (*launch) {
      std::vector<std::string> worker = launch_command;
      if (worker.empty()) {
        throw unitrain::ConfigError(
            "launch: give the workers' command after --, e.g. unitrain launch --nproc-per-node 2 "
            "-- train run.yaml");
      }
      launch_options.log_dir = !launch_log_dir.empty() ? launch_log_dir
                               : launch_exec           ? "logs"
                                                       : default_log_dir(worker);
      if (!launch_exec) worker.insert(worker.begin(), self_path());
      launch_options.command = worker;
      return unitrain::launch(launch_options);
    }
    if (*train) {
      const int signal = unitrain::run_config(resolve(train_args, train)).fit.signal;
      if (signal != 0) return 128 + signal;  // stopped by SIGINT/SIGTERM after a checkpoint
    } else if (*eval) {
      const unitrain::Config cfg = resolve(eval_args, eval);
      std::string choice = eval_checkpoint;
      // The default `best` falls back to `last` when the run tracked no best metric.
      if (eval->count("--checkpoint") == 0 &&
          !std::filesystem::exists(cfg.get_string("run_dir") + "/checkpoints/best")) {
        choice = "last";
      }
      auto r = unitrain::evaluate_checkpoint(cfg, choice, eval_split);
      std::string line = unitrain::detail::concat(r.split, " at step ", r.step, ":");
      for (const auto& [k, v] : r.metrics) line += " " + k + " " + unitrain::format_metric(v);
      unitrain::log::info(line);
      unitrain::log::info("results: " + r.results_file);
    } else if (*exp) {
      const std::string dir = unitrain::export_checkpoint(resolve(export_args, exp), export_checkpoint,
                                                          export_format, export_out);
      unitrain::log::info("exported " + dir + " as " + export_format + " to " + export_out);
    } else if (*config) {
      if (reference) {
        unitrain::register_builtins();
        for (const auto& p : config_args.plugins) unitrain::load_plugin(p);
        std::cout << unitrain::config_reference_markdown();
      } else {
        if (config_args.file.empty()) throw unitrain::ConfigError("config: give a YAML file (or --reference)");
        std::cout << resolve(config_args, config).dump();
      }
    } else if (*list) {
      unitrain::register_builtins();
      for (const auto& p : list_args.plugins) unitrain::load_plugin(p);
      for (const auto& kind : unitrain::catalog::kinds()) {
        std::cout << kind << ":\n";
        for (const auto* info : unitrain::catalog::of_kind(kind)) {
          std::cout << "  " << info->name << std::string(info->name.size() < 18 ? 18 - info->name.size() : 1, ' ')
                    << info->help << "\n";
        }
      }
    }
  } catch (const unitrain::ConfigError& e) {
    unitrain::log::error(e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    unitrain::log::error(e.what());
    return kExitFailure;
  }
  return 0;
}
