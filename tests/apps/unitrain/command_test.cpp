#include "apps/unitrain/command.h"

#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>

#include "unitrain/core/error.h"

namespace unitrain::cli {
namespace {

/// A command whose run() is `body`.
class FakeCommand : public Command {
 public:
  explicit FakeCommand(std::function<int()> body) : body_(std::move(body)) {}
  CLI::App* cli() const override { return nullptr; }
  int run() override { return body_(); }

 private:
  std::function<int()> body_;
};

TEST(Command, RunCommandPassesTheExitCodeOn) {
  FakeCommand verify_failed([] { return kExitFailure; });
  EXPECT_EQ(run_command(verify_failed), kExitFailure);
  FakeCommand stopped([] { return 128 + 15; });
  EXPECT_EQ(run_command(stopped), 143);
}

TEST(Command, RunCommandTurnsErrorsIntoExitCodes) {
  FakeCommand bad_config([]() -> int { throw ConfigError("optimizer.lr must be > 0, got -1"); });
  EXPECT_EQ(run_command(bad_config), kExitUsage);
  FakeCommand failed([]() -> int { throw std::runtime_error("disk full"); });
  EXPECT_EQ(run_command(failed), kExitFailure);
}

TEST(Command, ConfigArgsTakeTheFilePluginsAndOverrides) {
  CLI::App app;
  ConfigArgs args;
  CLI::App* train = app.add_subcommand("train");
  add_config_args(train, args, true);
  app.parse("train --plugin a.so run.yaml --optimizer.lr 2", false);
  EXPECT_EQ(args.file, "run.yaml");
  EXPECT_EQ(args.plugins, std::vector<std::string>{"a.so"});
  EXPECT_EQ(train->remaining(), (std::vector<std::string>{"--optimizer.lr", "2"}));
}

}  // namespace
}  // namespace unitrain::cli
