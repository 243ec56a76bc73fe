#include "apps/unitrain/command_line.h"

#include <gtest/gtest.h>

#include "apps/unitrain/command.h"

namespace unitrain::cli {
namespace {

/// argv for `words` (pointers into `words`, which must outlive it).
std::vector<char*> argv_of(std::vector<std::string>& words) {
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  return argv;
}

TEST(CommandLine, TheWorkersCommandIsEveryWordAfterTheSeparator) {
  std::vector<std::string> words = {
      "unitrain", "launch",         "--nproc-per-node", "2", "--", "train",
      "r.yaml",   "--log.trackers", "[console, csv]"};
  auto argv = argv_of(words);
  int argc = static_cast<int>(argv.size());
  EXPECT_EQ(take_worker_command(argc, argv.data()),
            (std::vector<std::string>{"train", "r.yaml", "--log.trackers", "[console, csv]"}));
  EXPECT_EQ(argc, 4);  // launch's own words, without the --
}

TEST(CommandLine, OnlyLaunchHasAWorkersCommand) {
  for (std::vector<std::string> words :
       {std::vector<std::string>{"unitrain", "train", "r.yaml", "--", "x"},
        std::vector<std::string>{"unitrain", "launch", "--nproc-per-node", "2"},
        std::vector<std::string>{"unitrain", "--version"}}) {
    auto argv = argv_of(words);
    int argc = static_cast<int>(argv.size());
    EXPECT_TRUE(take_worker_command(argc, argv.data()).empty()) << words[1];
    EXPECT_EQ(argc, static_cast<int>(words.size()));
  }
}

/// parse_command_line's answer for `words` on an app with the subcommands train and launch.
std::optional<int> parsed(std::vector<std::string> words) {
  CLI::App app;
  app.require_subcommand(1);
  app.add_subcommand("train");
  app.add_subcommand("launch")->add_option("--nproc-per-node");
  auto argv = argv_of(words);
  const int argc = static_cast<int>(argv.size());
  return parse_command_line(app, argc, argv.data(), argc);
}

TEST(CommandLine, ParseRunsAKnownCommandAndStopsOtherwise) {
  EXPECT_EQ(parsed({"unitrain", "train"}), std::nullopt);
  EXPECT_EQ(parsed({"unitrain", "trian"}), kExitUsage);  // an unknown command, with a hint
  EXPECT_EQ(parsed({"unitrain", "train", "--no-such-flag"}), kExitUsage);
  EXPECT_EQ(parsed({"unitrain", "--help"}), 0);
}

}  // namespace
}  // namespace unitrain::cli
