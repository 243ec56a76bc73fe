#pragma once
// What every `unitrain` subcommand shares: the Command that main dispatches to, the exit codes
// and the error funnel, and the config file with overrides that train, eval, export and config
// read.
#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "unitrain/core/config.h"

namespace unitrain::cli {

constexpr int kExitFailure = 1;  ///< the command failed (a run's error, an invalid checkpoint)
constexpr int kExitUsage = 2;    ///< bad arguments or config; the message names what was wrong

/// Values to suggest for an option or positional, beside its declaration (for completion).
using Choices = std::map<const CLI::Option*, std::vector<std::string>>;

/// One `unitrain` subcommand: built on the app, it declares its CLI11 subcommand and options,
/// bound to its own fields (so it must not move: it lives behind a unique_ptr); once the command
/// line is parsed, main runs the one that was chosen.
class Command {
 public:
  virtual ~Command() = default;
  /// The subcommand it declared; `*cli()` is true when the command line chose it.
  virtual CLI::App* cli() const = 0;
  /// Runs the parsed subcommand and returns the process's exit code. Throws ConfigError for a
  /// bad argument or config, any other exception for a failure (see run_command).
  virtual int run() = 0;
  /// Values completion suggests for its options. Called after register_builtins().
  virtual Choices choices() const { return {}; }
  /// Called before run(), for the signals a run saves on (the five checkpoint.on_signal may
  /// list), which main blocks before any library starts: by default they are unblocked, and a
  /// pending one ends the process as it would have. train holds them (StopSignalGuard::hold);
  /// launch keeps them blocked until its signal pipe forwards them to the workers.
  virtual void take_stop_signals();
  /// True for the command that takes another command after `--` (launch).
  virtual bool takes_command_after_separator() const { return false; }
  /// The `--key.path` overrides it takes after its file, with values to suggest, when they are
  /// not a run config's (sweep's own keys); empty: a run config's.
  virtual std::map<std::string, std::vector<std::string>> override_keys() const { return {}; }
};

/// A Command that declares its CLI11 subcommand `name` on `app` when it is built: what every
/// `unitrain` subcommand derives from. The derived class adds its options to `cli_`.
class Subcommand : public Command {
 public:
  CLI::App* cli() const override { return cli_; }

 protected:
  Subcommand(CLI::App& app, const std::string& name, const std::string& help)
      : cli_(app.add_subcommand(name, help)) {}

  CLI::App* const cli_;
};

using Commands = std::vector<std::unique_ptr<Command>>;

/// What main calls to add a subcommand: declares it on `app` and returns the Command that runs
/// it.
using CommandFactory = std::unique_ptr<Command> (*)(CLI::App& app);

/// The factory of a Command C built from the app alone (`explicit C(CLI::App& app)`).
template <typename C>
std::unique_ptr<Command> make_command(CLI::App& app) {
  return std::make_unique<C>(app);
}

/// The error funnel: runs `command` and returns its exit code; an exception is logged with its
/// whole message and gives kExitUsage (ConfigError) or kExitFailure (any other).
int run_command(Command& command);

/// A run's YAML file and the plugins to load before reading it (train, eval, export, config).
struct ConfigArgs {
  std::string file;
  std::vector<std::string> plugins;
};

/// Declares `config` (the file), `--plugin` and the trailing overrides on `cmd`.
void add_config_args(CLI::App* cmd, ConfigArgs& args, bool required);

/// Registers the built-in components, then loads `plugins`.
void load_components(const std::vector<std::string>& plugins);

/// The config file with the command's overrides, then `more` override words.
Config resolve(const ConfigArgs& args, const CLI::App* cmd,
               const std::vector<std::string>& more = {});

}  // namespace unitrain::cli
