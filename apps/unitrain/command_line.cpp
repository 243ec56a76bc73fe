#include "command_line.h"

#include <algorithm>
#include <cstring>

#include "command.h"
#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/schema.h"
#include "unitrain/log/console.h"

namespace unitrain::cli {

const char* const kLaunchSeparatorHint =
    "launch: put the workers' command after --, e.g. unitrain launch --nproc-per-node 2 -- "
    "train run.yaml --optimizer.lr 1e-3 (without --, its options would be read as launch's)";

namespace {

std::vector<std::string> subcommand_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

/// The first word that is no option must name a subcommand: `unitrain trian` gets a suggestion.
void check_subcommand_word(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.rfind('-', 0) == 0) continue;  // the global options take no values
    const auto names = subcommand_names(app);
    if (std::find(names.begin(), names.end(), word) != names.end()) return;
    const std::string hint = closest_match(word, names);
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("unknown command '" + word + "'" +
                      (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                      " (commands: " + known + ")");
  }
}

/// The first word that is no option: the subcommand's (or `end`).
char** subcommand_word(char** argv, char** end) {
  return std::find_if(argv + 1, end, [](const char* w) { return w[0] != '-'; });
}

bool is_separator(const char* word) { return std::strcmp(word, "--") == 0; }

/// `unitrain launch ...` whose worker command is not after `--`.
bool launch_without_separator(int argc, char** argv) {
  const auto end = argv + argc;
  const auto launch = subcommand_word(argv, end);
  return launch != end && std::strcmp(*launch, "launch") == 0 &&
         std::none_of(launch, end, is_separator);
}

}  // namespace

std::vector<std::string> take_worker_command(int& argc, char** argv) {
  const auto end = argv + argc;
  const auto launch = subcommand_word(argv, end);
  if (launch == end || std::strcmp(*launch, "launch") != 0) return {};
  const auto dashes = std::find_if(launch, end, is_separator);
  if (dashes == end) return {};
  std::vector<std::string> command(dashes + 1, end);
  argc = static_cast<int>(dashes - argv);
  return command;
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, int all_words) {
  try {
    check_subcommand_word(app, argc, argv);
    app.parse(argc, argv);
  } catch (const ConfigError& e) {
    log::error(error_text(e, std::string::npos));
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0 && launch_without_separator(all_words, argv)) {
      log::error(error_text(e, std::string::npos) + "\n" + kLaunchSeparatorHint);
      return kExitUsage;
    }
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // As every other bad input reads: "error: ...", then where to look.
    log::error(std::string(e.what()) + " (unitrain " +
               (app.get_subcommands().empty() ? std::string()
                                              : app.get_subcommands().front()->get_name() + " ") +
               "--help says what it takes)");
    return kExitUsage;
  }
  return std::nullopt;
}

CLI::Validator at_least(long long least) {
  return CLI::Validator(
      [least](std::string& text) -> std::string {
        long long value = 0;
        size_t used = 0;
        try {
          value = std::stoll(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size()) return "'" + text + "' is not a whole number";
        if (value < least) return text + " is less than " + std::to_string(least);
        return "";
      },
      "INT >= " + std::to_string(least));
}

CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        size_t used = 0;
        try {
          value = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size() || !(value == value)) {
          return "'" + text + "' is not a number";
        }
        if (!(value > 0)) return text + " is not more than 0";
        return "";
      },
      "NUMBER > 0");
}

}  // namespace unitrain::cli
