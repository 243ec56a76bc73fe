#include "unitrain/engine/config/load_config.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/data/build_data.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {
TEST(RunConfig, PrecedenceDefaultsThenYamlThenCommandLine) {
  std::string path = test::write_file(test::temp_dir() + "/run.yaml",
                                      "name: demo\noptimizer: {type: sgd, lr: 0.5}\n"
                                      "train: {max_length: 3 epochs}\n");
  Config c = load_run_config({path}, {{"optimizer.lr", "0.25"}, {"train.log_every", "5st"}});
  EXPECT_EQ(c.get_int("seed"), 42);                                // default
  EXPECT_EQ(c.at("optimizer").get_string("type"), "sgd");          // YAML
  EXPECT_EQ(c.at("train").get_string("max_length"), "3 epochs");   // YAML
  EXPECT_DOUBLE_EQ(c.at("optimizer").get_double("lr"), 0.25);      // command line
  EXPECT_EQ(c.at("train").get_string("log_every"), "5 steps");     // command line
  EXPECT_EQ(c.get_string("run_dir"), "runs/demo");                 // interpolated default
  EXPECT_EQ(c.at("data").at("loader").get_int("batch_size"), 32);  // nested default
  EXPECT_EQ(c.at("scheduler").get_string("type"), "constant");     // component default
}

TEST(RunConfig, ResolvingTwiceChangesNothing) {
  Config once = resolve_run_config(
      Config::from_string("name: x\nmodel: {type: mlp, args: {sizes: [4, 2]}}\n"));
  Config twice = resolve_run_config(once);
  EXPECT_EQ(once.dump(), twice.dump());
}

TEST(RunConfig, ErrorsNameTheKey) {
  std::string msg = test::config_error_of(
      [] { resolve_run_config(Config::from_string("optimiser: {lr: 1}\n")); });
  EXPECT_NE(msg.find("unknown key 'optimiser'; did you mean 'optimizer'?"), std::string::npos)
      << msg;
  msg = test::config_error_of(
      [] { resolve_run_config(Config::from_string("optimizer: {lr: 0}\n")); });
  EXPECT_NE(msg.find("optimizer.lr must be > 0, got 0"), std::string::npos) << msg;
  msg = test::config_error_of(
      [] { resolve_run_config(Config::from_string("optimizer: {type: adamx}\n")); });
  EXPECT_NE(msg.find("unknown optimizer 'adamx' at optimizer.type"), std::string::npos) << msg;
  EXPECT_NE(msg.find("adamw"), std::string::npos) << msg;
  msg = test::config_error_of(
      [] { resolve_run_config(Config::from_string("data: {loader: {batch_size: 0}}\n")); });
  EXPECT_NE(msg.find("data.loader.batch_size must be > 0, got 0"), std::string::npos) << msg;
  msg = test::config_error_of(
      [] { resolve_run_config(Config::from_string("train: {max_length: soon}\n")); });
  EXPECT_NE(msg.find("train.max_length"), std::string::npos) << msg;
  msg = test::config_error_of([] { resolve_run_config(Config::from_string("seed: abc\n")); });
  EXPECT_NE(msg.find("seed: expected int, got 'abc'"), std::string::npos) << msg;
}

TEST(RunConfig, ANameThatIsNotUtf8IsRefusedWithItsBytesEscaped) {
  const std::string msg = test::config_error_of(
      [] { RunSettings::from_config(resolve_run_config(Config::from_string("name: run\xff\n"))); });
  EXPECT_NE(msg.find("name must be valid UTF-8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'run\\xff'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\xff'), std::string::npos) << msg;
  EXPECT_NO_THROW(
      RunSettings::from_config(resolve_run_config(Config::from_string("name: caf\xc3\xa9\n"))));
}

TEST(RunConfig, ParsesOverrideWords) {
  Overrides o = parse_overrides({"--optimizer.lr", "3e-4", "--train.max_length=2 epochs", "--set",
                                 "model.args.sizes=[64,10]"});
  ASSERT_EQ(o.size(), 3u);
  EXPECT_EQ(o[0], (std::pair<std::string, std::string>{"optimizer.lr", "3e-4"}));
  EXPECT_EQ(o[1], (std::pair<std::string, std::string>{"train.max_length", "2 epochs"}));
  EXPECT_EQ(o[2], (std::pair<std::string, std::string>{"model.args.sizes", "[64,10]"}));
  EXPECT_THROW(parse_overrides({"stray"}), ConfigError);
  EXPECT_THROW(parse_overrides({"--optimizer.lr"}), ConfigError);
}

TEST(RunConfig, AnOverrideWithoutValueIsNamedNotTheWordAfterIt) {
  // `train cfg.yaml --foo --run_dir X`: --foo is at fault, not X.
  std::string msg = test::config_error_of([] { parse_overrides({"--foo", "--run_dir", "X"}); });
  EXPECT_NE(msg.find("override --foo has no value"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--run_dir"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("'X'"), std::string::npos) << msg;
  // Values may start with one dash, or with two when written with '='.
  Overrides o = parse_overrides({"--optimizer.lr", "-0.1", "--name=--odd", "--run_dir", "X"});
  ASSERT_EQ(o.size(), 3u);
  EXPECT_EQ(o[0].second, "-0.1");
  EXPECT_EQ(o[1].second, "--odd");
  EXPECT_EQ(o[2], (std::pair<std::string, std::string>{"run_dir", "X"}));
}

TEST(RunConfig, ReferenceDocumentsEveryKey) {
  std::string md = config_reference_markdown();
  for (const char* key : {"`train.max_length`", "`optimizer.lr`", "`data.loader.batch_size`",
                          "`scheduler.interval`", "### model `mlp`", "### optimizer `adamw`"}) {
    EXPECT_NE(md.find(key), std::string::npos) << key;
  }
}

namespace {
// A run config as a C++ program might load it: its model and data for `unitrain train` too.
const char* kBothWaysYaml =
    "name: both\nmodel: {type: mlp, args: {sizes: [4, 3]}}\n"
    "objective: {losses: [{type: cross_entropy}], metrics: [{type: accuracy}]}\n"
    "data: {train: {type: synthetic, args: {features: 4, classes: 3}}, collate: {type: stack},\n"
    "       loader: {batch_size: 8}}\n"
    "optimizer: {type: sgd, lr: 0.1}\ntrain: {max_length: 2 epochs}\nuser: {mine: 1}\n";
}  // namespace

TEST(RunConfig, TheLibraryPathIsToldOfTheKeysNothingRead) {
  const Config raw = Config::from_string(kBothWaysYaml);
  const Config resolved = resolve_run_config(raw);
  RunSettings::from_config(resolved);  // what the Trainer reads when it is built
  const std::vector<std::string> unread = warn_unread_keys(resolved);
  EXPECT_EQ(unread, (std::vector<std::string>{"model.type", "model.args.sizes",
                                              "objective.losses.0.type", "objective.metrics.0.type",
                                              "data.train.type", "data.train.args.features",
                                              "data.train.args.classes", "data.collate.type"}));
  EXPECT_TRUE(warn_unread_keys(resolved).empty());  // once
}

TEST(RunConfig, TheConfigDrivenPathReadsEveryKey) {
  const Config resolved =
      load_run_config({test::write_file(test::temp_dir() + "/both.yaml", kBothWaysYaml)}, {});
  RunSettings::from_config(resolved);
  build_data(resolved.at("data"), 1);
  ObjectiveModule module(resolved.at("model"), resolved.at("objective"));
  EXPECT_TRUE(resolved.unread_keys().empty()) << resolved.unread_keys().front();
  EXPECT_TRUE(warn_unread_keys(resolved).empty());
}

TEST(RunConfig, AnExplicitAutoIsRead) {
  // What `unitrain config` prints, a sweep's trial configs and best.yaml all set these.
  const Config resolved = resolve_run_config(
      Config::from_string("name: autos\nmodel: {type: mlp, args: {sizes: [4, 3]}}\n"
                          "objective: {losses: [{type: cross_entropy}]}\n"
                          "data: {train: {type: synthetic, args: {features: 4, classes: 3}},\n"
                          "       loader: {batch_size: 8, workers: auto}}\n"
                          "optimizer: {type: sgd, lr: 0.1}\n"
                          "train: {max_length: 2 epochs, threads: auto}\n"
                          "checkpoint: {every: auto}\ndistributed: {prefetch: auto}\n"));
  RunSettings::from_config(resolved);
  build_data(resolved.at("data"), 1);
  ObjectiveModule module(resolved.at("model"), resolved.at("objective"));
  EXPECT_EQ(resolved.unread_keys(), std::vector<std::string>{});
}

TEST(RunConfig, AProgramThatBuildsItsDataFromTheConfigUsedItsKeys) {
  const Config resolved = resolve_run_config(Config::from_string(kBothWaysYaml));
  RunSettings::from_config(resolved);
  build_data(resolved.at("data"), 1);
  EXPECT_EQ(resolved.unread_keys(),
            (std::vector<std::string>{"model.type", "model.args.sizes", "objective.losses.0.type",
                                      "objective.metrics.0.type"}));
}

}  // namespace unitrain
