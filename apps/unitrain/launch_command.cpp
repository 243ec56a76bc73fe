// launch: this machine's workers of a distributed run.
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "command_line.h"
#include "commands.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/launch/launcher.h"
#include "unitrain/launch/slurm_step.h"
#include "unitrain/log/console.h"

namespace unitrain::cli {
namespace {

std::string self_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw TrainError("launch: cannot find the unitrain executable: " + ec.message());
  return p.string();
}

/// run_dir/logs of `train CONFIG [overrides]`; "logs" for another command; "" (no log files,
/// the console only) when the config does not resolve: the workers report why and exit 2, and
/// no logs/ folder is left where the command was typed. run_dir is read alone, not through
/// RunSettings: parsing the sections would run their checks, and a config that resolves but
/// fails one of them keeps its workers' logs in run_dir/logs too.
std::string default_log_dir(const std::vector<std::string>& worker_args) {
  if (worker_args.size() < 2 || worker_args[0] != "train") return "logs";
  try {
    register_builtins();
    std::vector<std::string> overrides(worker_args.begin() + 2, worker_args.end());
    return load_run_config({worker_args[1]}, parse_overrides(overrides)).get_string("run_dir") +
           "/logs";
  } catch (const std::exception&) {
    return "";
  }
}

class LaunchCommand : public Subcommand {
 public:
  LaunchCommand(CLI::App& app, std::vector<std::string> worker_command)
      : Subcommand(app, "launch",
                   "start this machine's workers of a distributed run, e.g. unitrain "
                   "launch --nproc-per-node 2 -- train run.yaml [overrides]"),
        worker_command_(std::move(worker_command)) {
    add_group_options();
    cli_->add_option("--log-dir", log_dir_,
                     "where rank-<R>.log files go; default run_dir/logs of the train config");
    cli_->add_flag("--exec", exec_,
                   "run the command after -- as a program, not as a unitrain subcommand");
    cli_->add_option("command", misplaced_command_,
                     "after --: each worker's command, e.g. -- train run.yaml --optimizer.lr 1e-3");
  }
  bool takes_command_after_separator() const override { return true; }

  int run() override {
    // Words where launch's options go, with no -- before them.
    if (!misplaced_command_.empty()) throw ConfigError(kLaunchSeparatorHint);
    if (worker_command_.empty()) {
      throw ConfigError(
          "launch: give the workers' command after --, e.g. unitrain launch --nproc-per-node 2 "
          "-- train run.yaml");
    }
    options_.log_dir = !log_dir_.empty() ? log_dir_
                       : exec_           ? "logs"
                                         : default_log_dir(worker_command_);
    options_.command = worker_command_;
    if (!exec_) options_.command.insert(options_.command.begin(), self_path());
    options_.workers_hold_signals = !exec_;
    machines_from_slurm();
    return launch(options_);
  }

  /// Blocked until launch()'s signal pipe is there to forward them to the workers.
  void take_stop_signals() override {}

 private:
  /// Under srun (one task per node), the machines not given on the command line come from the
  /// Slurm step.
  void machines_from_slurm() {
    const auto step = slurm_step_machines([](const char* name) { return std::getenv(name); });
    if (!step) return;
    if (cli_->count("--nnodes") == 0) options_.nnodes = step->nnodes;
    if (cli_->count("--node-rank") == 0) options_.node_rank = step->node_rank;
    if (cli_->count("--master-addr") == 0) options_.master_addr = step->master_addr;
    if (cli_->count("--master-port") == 0) options_.master_port = step->master_port;
    log::info(fmt::format(
        "launch: machine {} of {}, rendezvous at {}:{} (from the Slurm step: "
        "SLURM_STEP_NUM_NODES, SLURM_PROCID, the first host of SLURM_STEP_NODELIST, "
        "SLURM_JOB_ID; options given on the command line win)",
        options_.node_rank, options_.nnodes, options_.master_addr, options_.master_port));
  }

  /// The process group's shape and the launcher's restart policy.
  void add_group_options() {
    cli_->add_option("--nproc-per-node", options_.nproc_per_node, "workers on this machine")
        ->capture_default_str();
    cli_->add_option("--nnodes", options_.nnodes, "machines in the run")->capture_default_str();
    cli_->add_option("--node-rank", options_.node_rank, "this machine's index, 0..nnodes-1")
        ->capture_default_str();
    cli_->add_option("--master-addr", options_.master_addr,
                     "address of machine 0 (it hosts the rendezvous)")
        ->capture_default_str();
    cli_->add_option("--master-port", options_.master_port, "port of the rendezvous")
        ->capture_default_str();
    cli_->add_option("--max-restarts", options_.max_restarts,
                     "restart the workers this many times after a failure (they resume from the "
                     "last checkpoint)")
        ->capture_default_str();
    cli_->add_option("--rendezvous-timeout", options_.rendezvous_seconds,
                     "several machines: seconds to wait for the other machines' launchers, at "
                     "the start and at each restart")
        ->capture_default_str();
    cli_->add_option("--grace-period", options_.grace_seconds,
                     "seconds between SIGTERM and SIGKILL when ending the other workers")
        ->capture_default_str();
    cli_->add_option("--resume-exit-code", options_.resume_exit_code,
                     "a worker's exit status that says it saved a checkpoint after a signal "
                     "(checkpoint.on_signal.exit_code): not a failure, no restart; the launcher "
                     "returns it")
        ->capture_default_str();
  }

  std::vector<std::string> worker_command_;
  LaunchOptions options_;
  std::string log_dir_;
  bool exec_ = false;
  std::vector<std::string> misplaced_command_;
};

}  // namespace

std::unique_ptr<Command> make_launch_command(CLI::App& app,
                                             std::vector<std::string> worker_command) {
  return std::make_unique<LaunchCommand>(app, std::move(worker_command));
}

}  // namespace unitrain::cli
