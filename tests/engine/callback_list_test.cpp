#include "unitrain/engine/callback_list.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "engine/regression_fixture.h"
#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {
namespace {

struct Named : Callback {
  std::string id;
  bool throws = false;
  bool config_error = false;
  std::vector<std::string>* seen = nullptr;
  explicit Named(std::string i) : id(std::move(i)) {}
  std::string name() const override { return id; }
  void on_epoch_start(Trainer&) override {
    if (config_error) throw ConfigError("bad key");
    if (throws) throw std::runtime_error("boom");
  }
  void on_exception(Trainer&, const std::exception& e) override {
    seen->push_back(id + ": " + e.what());
  }
};

TEST(CallbackList, AThrowingCallbackIsNamedAndSkippedByOnException) {
  Trainer trainer(test::base_config(test::temp_dir() + "/a"));
  CallbackList list(trainer);
  std::vector<std::string> seen;
  for (const char* id : {"first", "second", "third"}) {
    auto c = std::make_shared<Named>(id);
    c->seen = &seen;
    c->throws = std::string(id) == "second";
    list.add(c);
  }
  try {
    list.call("on_epoch_start", &Callback::on_epoch_start);
    FAIL() << "nothing thrown";
  } catch (const TrainError& e) {
    EXPECT_STREQ(e.what(), "callback 'second' failed in on_epoch_start: boom");
    list.on_exception(e);
  }
  EXPECT_EQ(seen,
            (std::vector<std::string>{"first: callback 'second' failed in on_epoch_start: boom",
                                      "third: callback 'second' failed in on_epoch_start: boom"}));
}

TEST(CallbackList, AListWithoutATrainerCallsNoHookAndTakesNoCallback) {
  CallbackList list;  // what the engine's parts run with where no Trainer drives them
  EXPECT_TRUE(list.empty());
  list.call("on_epoch_start", &Callback::on_epoch_start);  // nothing to call
  list.on_exception(std::runtime_error("x"));
  const std::string message =
      test::config_error_of([&] { list.add(std::make_shared<Named>("n")); });
  EXPECT_TRUE(test::contains(message, "callback 'n': this callback list belongs to no Trainer"))
      << message;
  EXPECT_TRUE(list.empty());
}

TEST(CallbackList, AConfigErrorStaysOne) {
  Trainer trainer(test::base_config(test::temp_dir() + "/a"));
  CallbackList list(trainer);
  auto c = std::make_shared<Named>("picky");
  c->config_error = true;
  list.add(c);
  EXPECT_EQ(
      test::error_of<ConfigError>([&] { list.call("on_epoch_start", &Callback::on_epoch_start); }),
      "callback 'picky' failed in on_epoch_start: bad key");
}

TEST(CallbackList, TheDefaultNameIsTheCppType) {
  struct Plain : Callback {};
  EXPECT_TRUE(test::contains(Plain().name(), "Plain")) << Plain().name();
}

TEST(Trainer, FitRunsOnExceptionWhenACallbackThrows) {
  std::vector<std::string> seen;
  auto bad = std::make_shared<Named>("bad");
  bad->throws = true;
  auto watcher = std::make_shared<Named>("watcher");
  bad->seen = watcher->seen = &seen;
  Trainer trainer(test::base_config(test::temp_dir() + "/a"));
  trainer.add_callback(bad);
  trainer.add_callback(watcher);
  test::Regression module;
  const std::string what =
      test::error_of<TrainError>([&] { trainer.fit(module, test::regression_data(32)); });
  EXPECT_EQ(what, "callback 'bad' failed in on_epoch_start: boom");
  EXPECT_EQ(seen, (std::vector<std::string>{"watcher: " + what}));
  EXPECT_EQ(module.calls, 0);
}

struct PauseAt : Callback {
  int64_t step;
  explicit PauseAt(int64_t s) : step(s) {}
  void on_step_end(Trainer& t, const MetricMap&) override {
    if (t.state().step == step) t.request_pause("test pause");
  }
};

TEST(Trainer, APauseSavesACheckpointThatTheNextFitResumesFrom) {
  const std::string dir = test::temp_dir() + "/run";
  FitResult paused, rest;
  {
    Trainer trainer(test::base_config(dir));
    trainer.add_callback(std::make_shared<PauseAt>(3));
    test::Regression module;
    paused = trainer.fit(module, test::regression_data(64));
  }
  EXPECT_EQ(paused.paused, "test pause");
  EXPECT_EQ(paused.exit_code, 75);  // checkpoint.on_signal.exit_code: run it again to resume
  EXPECT_EQ(paused.state.step, 3);
  EXPECT_FALSE(paused.stopped);
  EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoints/step-3"));
  {
    Trainer trainer(test::base_config(dir));
    test::Regression module;
    rest = trainer.fit(module, test::regression_data(64));
  }
  EXPECT_TRUE(test::contains(rest.resumed_from, "step-3")) << rest.resumed_from;
  EXPECT_EQ(rest.paused, "");
  EXPECT_EQ(rest.exit_code, 0);
  EXPECT_EQ(rest.state.step, 16);
}

struct Adds : Callback {
  double next = 1;
  void on_step_end(Trainer& t, const MetricMap&) override { t.log_mean("mine", next++); }
};

TEST(Trainer, LogMeanAveragesTheValuesSinceTheLastLog) {
  Config c = test::base_config(test::temp_dir() + "/run");
  c.set("train.log_every", "4 steps");
  Trainer trainer(c);
  trainer.add_callback(std::make_shared<Adds>());
  test::Regression module;
  FitResult r = trainer.fit(module, test::regression_data(64));
  EXPECT_EQ(r.last_train.at("train/mine"), (13 + 14 + 15 + 16) / 4.0);  // steps 13..16
}

}  // namespace
}  // namespace unitrain
