#include "unitrain/optim/scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "test_util.h"

namespace unitrain {
namespace {

using nlohmann::json;

Config scheduler_section(const std::string& yaml) {
  return Config(Config::from_string(yaml).node(), "scheduler");
}

ScheduleContext context(int64_t total, double base_lr = 0.1) {
  ScheduleContext c;
  c.total_steps = total;
  c.base_lr = base_lr;
  return c;
}

}  // namespace

// Outside the anonymous namespace, as the TEST_F classes derived from it are.
class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override { register_builtin_schedulers(); }
};

// Every lr PyTorch 1.13 (and transformers' published lambdas) give, within 1e-9 relative.
TEST_F(SchedulerTest, MatchesPyTorchAndTransformers) {
  std::ifstream in(test::source_dir() + "/tests/optim/scheduler_expected.json");
  ASSERT_TRUE(in.good()) << "missing tests/optim/scheduler_expected.json";
  const json expected = json::parse(in);
  const double base_lr = expected["base_lr"];
  ASSERT_GE(expected["cases"].size(), 20u);
  std::set<std::string> covered;
  for (const auto& c : expected["cases"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    json sec = {{"type", c["type"]}, {"args", c["args"]}};
    auto sched = build_scheduler(scheduler_section(sec.dump()), context(c["total_steps"], base_lr));
    covered.insert(c["type"].get<std::string>());
    const bool metric_driven = !c["metrics"].is_null();
    EXPECT_EQ(sched->needs_metric(), metric_driven);
    const auto& lrs = c["lr"];
    ASSERT_EQ(lrs.size(), expected["steps"].get<size_t>());
    for (size_t i = 0; i < lrs.size(); ++i) {
      const double want = lrs[i];
      const double got = base_lr * sched->factor(static_cast<int64_t>(i));
      EXPECT_NEAR(got, want, 1e-9 * std::abs(want) + 1e-15) << name << " step " << i;
      if (metric_driven) sched->observe(c["metrics"][i]);
    }
  }
  for (const auto* info : catalog::of_kind("scheduler")) {
    EXPECT_TRUE(covered.count(info->name)) << "no parity case for scheduler " << info->name;
  }
}

TEST_F(SchedulerTest, DurationsBecomeSchedulerSteps) {
  ScheduleContext c;
  c.steps_per_epoch = 50;
  c.samples_per_step = 64;
  EXPECT_EQ(c.to_sched_steps(TrainUnit::steps(120)), 120);
  EXPECT_EQ(c.to_sched_steps(TrainUnit::epochs(2)), 100);
  EXPECT_EQ(c.to_sched_steps(TrainUnit::samples(650)), 10);  // rounds down
  EXPECT_EQ(c.to_sched_steps(TrainUnit::samples(-5)), 0);
  c.per_epoch = true;
  EXPECT_EQ(c.to_sched_steps(TrainUnit::epochs(3)), 3);
  EXPECT_EQ(c.to_sched_steps(TrainUnit::steps(120)), 2);
  EXPECT_EQ(c.to_sched_steps(TrainUnit::samples(6400)), 2);
  EXPECT_EQ(c.to_sched_steps(TrainUnit::samples(6399)), 1);
}

TEST_F(SchedulerTest, WarmupInEpochsAndPerEpochInterval) {
  ScheduleContext c = context(1000);
  c.steps_per_epoch = 10;
  auto s = build_scheduler(scheduler_section("{type: constant, args: {warmup: 1 epoch}}"), c);
  EXPECT_DOUBLE_EQ(s->factor(5), 0.5);
  EXPECT_DOUBLE_EQ(s->factor(10), 1.0);
  // interval: epoch — the run is 8 epochs, warmup 2 epochs, then linear decay to 0.
  ScheduleContext e = context(8);
  e.steps_per_epoch = 10;
  auto lin = build_scheduler(
      scheduler_section("{type: linear, interval: epoch, args: {warmup: 20 steps}}"), e);
  EXPECT_DOUBLE_EQ(lin->factor(1), 0.5);
  EXPECT_DOUBLE_EQ(lin->factor(2), 1.0);
  EXPECT_DOUBLE_EQ(lin->factor(5), 0.5);
  EXPECT_DOUBLE_EQ(lin->factor(8), 0.0);
}

TEST_F(SchedulerTest, DefaultIsConstant) {
  auto s = build_scheduler(scheduler_section("{}"), context(0));
  EXPECT_DOUBLE_EQ(s->factor(0), 1.0);
  EXPECT_DOUBLE_EQ(s->factor(123456), 1.0);
  EXPECT_FALSE(s->needs_metric());
  EXPECT_TRUE(s->state().empty());
}

TEST_F(SchedulerTest, ReduceOnPlateauStateResumesExactly) {
  const std::string yaml =
      "{type: reduce_on_plateau, args: {patience: 1, cooldown: 1, factor: 0.5}}";
  auto a = build_scheduler(scheduler_section(yaml), context(0));
  EXPECT_TRUE(a->needs_metric());
  EXPECT_EQ(a->monitored_metric(), "val/loss");
  const std::vector<double> metrics = {1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85};
  for (size_t i = 0; i < 5; ++i) a->observe(metrics[i]);
  EXPECT_DOUBLE_EQ(a->factor(0), 0.5);
  auto b = build_scheduler(scheduler_section(yaml), context(0));
  b->load_state(a->state());
  for (size_t i = 5; i < metrics.size(); ++i) {
    a->observe(metrics[i]);
    b->observe(metrics[i]);
    EXPECT_DOUBLE_EQ(a->factor(0), b->factor(0)) << i;
  }
  EXPECT_DOUBLE_EQ(b->factor(0), 0.25);
  EXPECT_NE(test::config_error_of([&] {
              b->load_state({{"factor", 1.0}});
            }).find("no 'best' entry"),
            std::string::npos);
}

TEST_F(SchedulerTest, BadSectionsGiveErrorsNamingTheKey) {
  auto err = [](const std::string& yaml, ScheduleContext c) {
    return test::config_error_of([&] { build_scheduler(scheduler_section(yaml), c); });
  };
  std::string msg = err("{type: linear}", context(0));
  EXPECT_NE(msg.find("scheduler.args.total is needed"), std::string::npos) << msg;
  msg = err("{type: cosine, args: {total: 0 steps}}", context(100));
  EXPECT_NE(msg.find("scheduler.args.total must be at least one scheduler step"), std::string::npos)
      << msg;
  msg = err("{type: polynomial, args: {lr_end: 0.5}}", context(100, 0.1));
  EXPECT_NE(msg.find("scheduler.args.lr_end (0.5) must be smaller than the base lr"),
            std::string::npos)
      << msg;
  msg = err("{type: polynomial}", context(100, 0.0));
  EXPECT_NE(msg.find("needs the optimizer's base lr"), std::string::npos) << msg;
  msg = err("{type: step}", context(100));
  EXPECT_NE(msg.find("missing required key scheduler.args.step_size"), std::string::npos) << msg;
  msg = err("{type: step, args: {step_size: 10}}", context(100));
  EXPECT_NE(msg.find("scheduler.args.step_size"), std::string::npos) << msg;
  msg = err("{type: cosine, args: {warmup: 10 minutes}}", context(100));
  EXPECT_NE(msg.find("scheduler.args.warmup"), std::string::npos) << msg;
  msg = err("{type: cosin}", context(100));
  EXPECT_NE(msg.find("unknown scheduler 'cosin' at scheduler.type (did you mean 'cosine'?)"),
            std::string::npos)
      << msg;
  msg = err("{type: constant, interval: batch}", context(100));
  EXPECT_NE(msg.find("scheduler.interval"), std::string::npos) << msg;
  msg = err("{type: reduce_on_plateau, args: {factor: 1.0}}", context(100));
  EXPECT_NE(msg.find("scheduler.args.factor must be < 1"), std::string::npos) << msg;
  msg = err("{type: multistep, args: {milestones: [10, -1]}}", context(100));
  EXPECT_NE(msg.find("scheduler.args.milestones"), std::string::npos) << msg;
}

}  // namespace unitrain
