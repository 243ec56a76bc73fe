#pragma once
// The `unitrain` subcommands, one group a file. Each make_* declares its subcommand on `app`
// (the order of the calls is the order `unitrain --help` lists them) and returns the Command
// that runs it.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "command.h"

namespace unitrain::cli {

// run_commands.cpp: what a run's config drives.
extern const CommandFactory make_train_command;
extern const CommandFactory make_eval_command;
extern const CommandFactory make_export_command;

// generate_command.cpp: text from a causal LM.
extern const CommandFactory make_generate_command;

// config_commands.cpp: writing and reading configs, and the components they name.
extern const CommandFactory make_config_command;
extern const CommandFactory make_list_command;
extern const CommandFactory make_init_command;

// launch_command.cpp: `worker_command` is take_worker_command()'s.
std::unique_ptr<Command> make_launch_command(CLI::App& app,
                                             std::vector<std::string> worker_command);

// report_command.cpp
extern const CommandFactory make_report_command;

// sweep_command.cpp
extern const CommandFactory make_sweep_command;

// tool_commands.cpp: the tools for a run's files.
extern const CommandFactory make_checkpoint_command;
extern const CommandFactory make_tokenizer_command;

// completion_command.cpp: completes every command in `commands`, read when it runs.
std::unique_ptr<Command> make_completion_command(CLI::App& app, const Commands& commands);

}  // namespace unitrain::cli
