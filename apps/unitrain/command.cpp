#include "command.h"

#include <pthread.h>

#include <cctype>
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

/// `message`, with g_started_elsewhere's note when it is about a path not found (which a
/// relative path read from another folder would explain); other errors are left as they are.
std::string with_where_started(const std::string& message) {
  if (g_started_elsewhere.empty()) return message;
  std::string lower = message;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* about : {"does not exist", "no such file", "matches no file", "relative",
                            "cannot open", "cannot read"}) {
    if (lower.find(about) != std::string::npos) return message + g_started_elsewhere;
  }
  return message;
}

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
    log::error(with_where_started(error_text(e, kNoLimit)));
    return kExitUsage;
  } catch (const std::exception& e) {  // a c10::Error here would print a C++ backtrace
    log::error(with_where_started(error_text(e, kNoLimit)));
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
