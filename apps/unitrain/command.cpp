#include "command.h"

#include <pthread.h>

#include <csignal>
#include <filesystem>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/options.h"
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

/// The folder a run was started in, from where its folder is (`folder`) and its run_dir as
/// config.yaml says it: `folder` without run_dir's trailing parts; "" when run_dir is absolute
/// or is not how `folder` ends.
std::filesystem::path start_folder(const std::filesystem::path& folder,
                                   const std::string& run_dir) {
  namespace fs = std::filesystem;
  const fs::path rel = fs::path(run_dir).lexically_normal();
  if (run_dir.empty() || rel.is_absolute()) return {};
  fs::path at = fs::absolute(folder).lexically_normal();
  if (!at.has_filename()) at = at.parent_path();  // "runs/x/" ends with an empty part
  std::vector<fs::path> parts(rel.begin(), rel.end());
  while (!parts.empty() && parts.back().empty()) parts.pop_back();
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (at.filename() != *it) return {};
    at = at.parent_path();
  }
  return at;
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
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(args.file, error)) return load_run_config({args.file}, overrides);
  // A run folder: the config it trained with (config.yaml, every override it was given
  // included), in the folder given wherever it was started from.
  const fs::path saved = fs::path(args.file) / "config.yaml";
  UT_CHECK(fs::is_regular_file(saved, error), args.file,
           " is a folder without a config.yaml: give the run's YAML file, or a run folder "
           "(its run_dir)");
  overrides.insert(overrides.begin(), {"run_dir", option_detail::yaml_text(args.file)});
  Config config = load_run_config({saved.string()}, overrides);
  const fs::path started =
      start_folder(args.file, Config::from_file(saved.string()).get_string("run_dir"));
  if (!started.empty() && fs::current_path(error) != started) {
    g_started_elsewhere = " (" + args.file + " was started in " + started.string() +
                          ": its config's relative paths are read from there; run the command "
                          "from that folder)";
  }
  return config;
}

}  // namespace unitrain::cli
