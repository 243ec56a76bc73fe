// unitrain: the command line, libexec/unitrain/unitrain (bin/unitrain, apps/unitrain/start.c,
// executes it with the signals a run saves on blocked). Declares the subcommands
// (apps/unitrain/*_command(s).cpp, one group a file), parses the arguments and runs the chosen
// one; nothing else.
#include <CLI/CLI.hpp>

#include "command.h"
#include "command_line.h"
#include "commands.h"
#include "unitrain/core/memory.h"
#include "unitrain/log/console.h"
#include "unitrain/threads/cpu_budget.h"

int main(int argc, char** argv) {
  namespace cli = unitrain::cli;
  // Before anything allocates much: training steps reuse freed memory instead of mapping it
  // anew each step (docs/performance.md, "Memory"). UNITRAIN_MALLOC=system turns it off.
  if (const std::string note = unitrain::keep_freed_memory(); !note.empty()) {
    unitrain::log::file_only(note);  // train.log's first line
  }
  // Other programs' CPU load is measured from here to the start of training (threads: auto).
  unitrain::startup_load_probe();
  CLI::App app{"unitrain: train any LibTorch model from a YAML file or a few lines of C++"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "unitrain 0.1.0");

  const int all_words = argc;
  std::vector<std::string> worker_command = cli::take_worker_command(argc, argv);
  cli::Commands commands;  // in the order `unitrain --help` lists them
  commands.push_back(cli::make_train_command(app));
  commands.push_back(cli::make_config_command(app));
  commands.push_back(cli::make_eval_command(app));
  commands.push_back(cli::make_export_command(app));
  commands.push_back(cli::make_generate_command(app));
  commands.push_back(cli::make_launch_command(app, std::move(worker_command)));
  commands.push_back(cli::make_list_command(app));
  commands.push_back(cli::make_init_command(app));
  commands.push_back(cli::make_report_command(app));
  commands.push_back(cli::make_sweep_command(app));
  commands.push_back(cli::make_checkpoint_command(app));
  commands.push_back(cli::make_tokenizer_command(app));
  commands.push_back(cli::make_completion_command(app, commands));

  if (const auto exit_code = cli::parse_command_line(app, argc, argv, all_words)) return *exit_code;
  for (const auto& command : commands) {
    if (!*command->cli()) continue;
    command->take_stop_signals();
    return cli::run_command(*command);
  }
  return 0;
}
