#include "command.h"

#include <pthread.h>

#include <csignal>
#include <vector>

#include "unitrain/commands/open_run.h"
#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/plugin.h"
#include "unitrain/core/save_signals.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/log/console.h"

namespace unitrain::cli {
namespace {

constexpr size_t kNoLimit = std::string::npos;  // error_text: the whole message

/// Said after an error when the command read a run folder started in another folder than this
/// one: its config's relative paths are from there.
std::string g_started_elsewhere;

}  // namespace

void Command::take_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (const SaveSignal& s : save_signals()) sigaddset(&set, s.number);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

int run_command(Command& command) {
  try {
    return command.run();
  } catch (const ConfigError& e) {
    log::error(error_text(e, kNoLimit) + g_started_elsewhere);
    return kExitUsage;
  } catch (const std::exception& e) {  // a c10::Error here would print a C++ backtrace
    log::error(error_text(e, kNoLimit) + g_started_elsewhere);
    return kExitFailure;
  }
}

void add_config_args(CLI::App* cmd, ConfigArgs& args, bool required) {
  cmd->add_option("config", args.file,
                  "the run's YAML file, or a run folder (its config.yaml: the config it trained "
                  "with, overrides included)")
      ->required(required);
  cmd->add_option("--plugin", args.plugins,
                  "a shared library (.so) registering more components; repeatable")
      ->allow_extra_args(false);  // one value per --plugin, so the config may follow it
  cmd->allow_extras();
  cmd->footer(
      "Any key of the config can be overridden after the file: --optimizer.lr 3e-4, "
      "--train.max_length '2 epochs', or --set model.args.sizes=[64,10]. "
      "Precedence: built-in defaults < YAML < command line.");
}

void load_components(const std::vector<std::string>& plugins) {
  register_builtins();
  for (const auto& p : plugins) load_plugin(p);
}

Config resolve(const ConfigArgs& args, const CLI::App* cmd, const std::vector<std::string>& more) {
  load_components(args.plugins);
  std::vector<std::string> words = cmd->remaining();
  words.insert(words.end(), more.begin(), more.end());
  Overrides overrides = parse_overrides(words);
  RunSource source = read_run_source(args.file, std::move(overrides));
  g_started_elsewhere = source.started_elsewhere;
  return std::move(source.config);
}

}  // namespace unitrain::cli
