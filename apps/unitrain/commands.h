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
std::unique_ptr<Command> make_train_command(CLI::App& app);
std::unique_ptr<Command> make_eval_command(CLI::App& app);
std::unique_ptr<Command> make_export_command(CLI::App& app);

// config_commands.cpp: writing and reading configs, and the components they name.
std::unique_ptr<Command> make_config_command(CLI::App& app);
std::unique_ptr<Command> make_list_command(CLI::App& app);
std::unique_ptr<Command> make_init_command(CLI::App& app);

// launch_command.cpp: `worker_command` is take_worker_command()'s.
std::unique_ptr<Command> make_launch_command(CLI::App& app,
                                             std::vector<std::string> worker_command);

// report_command.cpp
std::unique_ptr<Command> make_report_command(CLI::App& app);

// tool_commands.cpp: the tools for a run's files.
std::unique_ptr<Command> make_checkpoint_command(CLI::App& app);
std::unique_ptr<Command> make_tokenizer_command(CLI::App& app);

// completion_command.cpp: completes every command in `commands`, read when it runs.
std::unique_ptr<Command> make_completion_command(CLI::App& app, const Commands& commands);

}  // namespace unitrain::cli
