#pragma once
// The command line before and around CLI11's parse: launch's worker command after `--`, an
// unknown subcommand word, and what a parse error prints.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace unitrain::cli {

/// What launch says when its workers' command is not after `--`.
extern const char* const kLaunchSeparatorHint;

/// `launch ... -- <command>`: the workers' command, word for word (CLI11 would read a value like
/// "[console, tensorboard]" as a list and split it); `argc` then ends before the "--". Empty,
/// and `argc` unchanged, for any other command line.
std::vector<std::string> take_worker_command(int& argc, char** argv);

/// A check of a whole-number option: at least `least` (CLI11's own range checks print their
/// bounds as 300-digit doubles).
CLI::Validator at_least(long long least);
/// A check of a number option: more than 0.
CLI::Validator positive();

/// Parses the command line into `app`'s subcommands. An exit code when the process should end
/// here (--help, --version: 0; an unknown subcommand or a parse error: kExitUsage, after printing
/// why); nullopt when the chosen subcommand should run. `all_words` is argc before
/// take_worker_command.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, int all_words);

}  // namespace unitrain::cli
