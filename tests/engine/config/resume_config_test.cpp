#include "unitrain/engine/config/resume_config.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/config/load_config.h"

namespace unitrain {
namespace {

Config resumable_config() {
  return resolve_run_config(Config::from_string(
      "model: {type: mlp, args: {sizes: [4, 3]}}\n"
      "data: {train: {type: synthetic, args: {features: 4, classes: 3}}, test: {type: synthetic}}\n"
      "optimizer: {type: sgd}\n"
      "objective: {losses: [{type: cross_entropy}]}\n"));
}

// Each key the resume check refused before the classes were declared, with its reason.
TEST(ResumeConfig, FixedKeysAndTheirReasons) {
  const auto schema = run_schema();
  const std::vector<std::pair<std::string, std::string>> fixed = {
      {"model.type", "the saved weights belong to that model"},
      {"model.args.sizes", "the saved weights belong to that model"},
      {"objective.inputs", "the model's inputs and outputs are fixed"},
      {"objective.predictions", "the model's inputs and outputs are fixed"},
      {"optimizer.type", "only optimizer.lr may change"},
      {"optimizer.args.momentum", "only optimizer.lr may change"},
      {"optimizer.no_decay_bias_norm", "only optimizer.lr may change"},
      {"scheduler.type", "the schedule's state is saved"},
      {"scheduler.interval", "the schedule's state is saved"},
      {"seed", "the data order and random state follow the seed"},
      {"data.train.type", "the position in the epoch refers to that training data"},
      {"data.train.args.path", "the position in the epoch refers to that training data"},
      {"data.validation_ratio", "the position in the epoch refers to that training data"},
      {"data.normalize.mean", "the position in the epoch refers to that training data"},
      {"data.loader.batch_size", "the position in the epoch refers to those batches"},
      {"data.loader.drop_last", "the position in the epoch refers to those batches"},
      {"data.loader.shuffle", "the position in the epoch refers to those batches"},
      {"train.accumulation_steps", "the position in the accumulation window refers to it"},
      {"train.global_batch_size", "the position in the accumulation window refers to it"},
  };
  for (const auto& [key, why] : fixed) {
    const ResumeRule rule = schema->resume_rule(key);
    EXPECT_EQ(rule.on, OnResume::Fixed) << key;
    EXPECT_TRUE(test::contains(rule.why, why)) << key << ": " << rule.why;
  }
  for (const char* key : {"optimizer.lr", "scheduler.args.warmup", "model.init_from",
                          "model.init_strict", "data.val.args.n", "objective.losses.0.weight",
                          "train.val_every", "early_stopping.patience", "name", "user.mine"}) {
    EXPECT_NE(schema->resume_rule(key).on, OnResume::Fixed) << key;
  }
}

// The keys that left a finished run finished before the classes were declared.
TEST(ResumeConfig, HarmlessKeysChangeNothingTrained) {
  for (const char* key :
       {"log", "log.progress_bar", "train.threads", "train.max_length", "train.log_every",
        "data.loader.workers", "data.loader.prefetch", "data.test", "data.test.type",
        "data.test.args.path", "checkpoint.every", "checkpoint.best.metric", "checkpoint",
        "distributed.backend", "distributed.timeout", "name",
        "run_dir"}) {  // a run folder copied or moved is the same run
    EXPECT_TRUE(changes_nothing_trained(key)) << key;
  }
  for (const char* key :
       {"optimizer.lr", "train.val_every", "train.clip_grad_norm", "model.init_from",
        "early_stopping.patience", "data.val.type", "scheduler.args.warmup",
        "objective.losses.0.weight", "data.loader.batch_size", "logs"}) {
    EXPECT_FALSE(changes_nothing_trained(key)) << key;
  }
}

TEST(ResumeConfig, RefusesAFixedChangeNamingTheTypeFirstAndListsTheRest) {
  const Config saved = resumable_config();
  Config current = saved.clone();
  current.set("optimizer.lr", "0.5");
  current.set("log.progress_bar", "false");
  auto changes = check_resume_config(saved, current, "ckpt");
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].str(), "log.progress_bar: auto -> false");
  EXPECT_EQ(changes[1].key, "optimizer.lr");

  current.set("model.args.sizes", "[4, 5, 3]");
  current.set("model.type", "cnn");
  const std::string msg =
      test::error_of<ConfigError>([&] { check_resume_config(saved, current, "ckpt"); });
  EXPECT_TRUE(test::contains(msg,
                             "cannot resume from ckpt: model.type changed from 'mlp' to "
                             "'cnn', but the saved weights belong to that model"))
      << msg;
  EXPECT_TRUE(test::contains(msg, "--checkpoint.resume none")) << msg;
}

}  // namespace
}  // namespace unitrain
