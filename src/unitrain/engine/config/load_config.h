#pragma once
// The run's configuration: the root schema and the one place where defaults, YAML files and
// command-line overrides are combined.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/core/config.h"
#include "unitrain/core/schema.h"

namespace unitrain {

struct RunSettings;

/// The root schema: name, seed, run_dir, model, objective, data, optimizer, scheduler, train,
/// log, ..., user; declared once in RunSettings::declare from each area's section schema.
std::shared_ptr<const Schema> run_schema();

/// `key.path` -> YAML text, from `--key.path value` or `--set key.path=value`.
using Overrides = std::vector<std::pair<std::string, std::string>>;

/// Precedence, in one place: built-in defaults < YAML files (later files win) < overrides.
/// Returns the resolved config with `${key}` references in strings filled in (e.g.
/// `run_dir: runs/${name}`). Throws ConfigError naming the key or file at fault.
Config load_run_config(const std::vector<std::string>& files, const Overrides& overrides);

/// Resolves an in-memory config (library users): schema defaults and checks, then `${key}`
/// interpolation. Idempotent.
Config resolve_run_config(const Config& raw);

/// resolve_run_config for the Trainer of a program that may build its own module: a model or
/// objective section that does not resolve (such a program never reads them) is kept as given,
/// with a warning naming the error; anything else wrong is the error it was.
Config resolve_program_config(const Config& raw);
/// The RunSettings of a config resolve_program_config made (without the model sections when
/// they are the ones kept as given).
RunSettings program_settings(const Config& resolved);

/// The option that starts a new run in a fresh folder, for advice in messages about the run in
/// `resolved`'s run_dir: `--name <new-name>` when run_dir is runs/<name> (the default
/// `runs/${name}`), else `--run_dir <new-folder>`, since --name does not move an explicit run_dir.
std::string new_run_option(const Config& resolved);

/// Logs one warning naming every key the user set in `config` (a run config from
/// load_run_config or resolve_run_config, or one read by Config::from_file) that nothing has
/// read so far (see Config::unread_keys): e.g. `model.type` or `data.collate` in a C++ program
/// that builds its own model and data. Once per config: later calls warn nothing. Called at the
/// start of Trainer::fit, when the Trainer and the program have read what they use. Returns the
/// keys it named.
std::vector<std::string> warn_unread_keys(const Config& config);

/// docs/config.md: every key of the root schema and every registered component's args.
std::string config_reference_markdown();

}  // namespace unitrain

namespace unitrain {
/// Turns command-line words into overrides: `--key.path value`, `--key.path=value` and
/// `--set key.path=value`. ConfigError on a word that is none of these (naming it).
Overrides parse_overrides(const std::vector<std::string>& words);
}  // namespace unitrain
