#pragma once
// `unitrain completion bash`: a bash-completion script generated from the command's own
// declarations (its subcommands and options, and the config schema), so it cannot drift.
#include <map>
#include <string>
#include <vector>

#include "unitrain/core/schema.h"

namespace unitrain {

/// One option of a subcommand, as completion sees it.
struct CompletionOption {
  std::string name;                  ///< "--plugin", "-h"
  bool takes_value = false;          ///< false for flags
  bool path_value = false;           ///< the value is a file or folder
  std::vector<std::string> choices;  ///< the allowed values, when they are a fixed list
};

/// One subcommand, as completion sees it.
struct CompletionCommand {
  std::string name;
  std::vector<CompletionOption> options;
  std::vector<std::string> positional_choices;  ///< e.g. `completion bash`, `list model`
  bool positional_paths = false;                ///< positionals are files (a config)
  bool config_overrides = false;                ///< takes `--key.path VALUE` after the file
  bool command_after_separator = false;         ///< `launch ... -- train run.yaml`
  /// The overrides it takes when they are not the run config's (`--key` words; their values
  /// are not suggested): a sweep file's keys.
  std::vector<std::string> own_keys;
};

/// What the script completes: `program`'s global options and subcommands, and the config keys.
struct CompletionSpec {
  std::string program = "unitrain";
  std::vector<std::string> global_options;  ///< --help, --version
  std::vector<CompletionCommand> commands;
  /// Key paths accepted as `--key.path` overrides, with the values to suggest for each
  /// (component names for `*.type`, true/false for bools; empty: anything).
  std::map<std::string, std::vector<std::string>> config_keys;
};

/// Every key path of `schema` with its suggested values: leaves, `<section>.type` (the
/// registered names of its kind) and `<section>.args.<arg>` for the arguments of every
/// registered component of that kind. Lists of sections are offered as a whole
/// (`objective.losses`).
std::map<std::string, std::vector<std::string>> config_key_paths(const Schema& schema);

/// The bash script: defines `_<program>` and registers it with `complete`. Sourcing it is
/// enough (`source <(unitrain completion bash)`).
std::string bash_completion_script(const CompletionSpec& spec);

}  // namespace unitrain
