// sweep: a hyperparameter search over ordinary runs (docs/sweeps.md).
#include <filesystem>

#include "bash_completion.h"
#include "commands.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/sweep/sweep.h"
#include "unitrain/sweep/sweep_options.h"

namespace unitrain::cli {
namespace {

class SweepCommand : public Subcommand {
 public:
  explicit SweepCommand(CLI::App& app)
      : Subcommand(app, "sweep",
                   "search hyperparameters: train a trial run per point of a search space "
                   "(grid, random or asha) into sweeps/<name>/; run it again to continue it") {
    cli_->add_option("sweep", file_, "the sweep's YAML file (docs/sweeps.md)")->required();
    cli_->add_option("--plugin", plugins_,
                     "a shared library (.so) registering more components, loaded here and by "
                     "every trial; repeatable")
        ->allow_extra_args(false);
    cli_->allow_extras();
    cli_->footer(
        "Any key of the sweep file can be overridden after it: --parallel 2, --max_trials 8, "
        "--asha.reduction_factor 4.");
  }

  /// The sweep file's keys, and `space.<run key>` for each run config key.
  std::map<std::string, std::vector<std::string>> override_keys() const override {
    std::map<std::string, std::vector<std::string>> keys =
        config_key_paths(*options_of<SweepOptions>().schema());
    keys.erase("space");
    for (const auto& [key, values] : config_key_paths(*run_schema())) keys["space." + key] = {};
    return keys;
  }

  int run() override {
    load_components(plugins_);
    const SweepOptions options = load_sweep_options(file_, parse_overrides(cli_->remaining()));
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) throw TrainError("sweep: cannot find the unitrain executable: " + ec.message());
    return run_sweep(options, self.string(), plugins_).exit_code;
  }

 private:
  std::string file_;
  std::vector<std::string> plugins_;
};

}  // namespace

const CommandFactory make_sweep_command = make_command<SweepCommand>;

}  // namespace unitrain::cli
