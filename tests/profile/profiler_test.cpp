#include "unitrain/profile/profiler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "unitrain/report/profile_summary.h"

namespace unitrain {
namespace {

ProfileOptions schedule(int64_t wait, int64_t warmup, int64_t active, int64_t repeat,
                        bool trace = false) {
  ProfileOptions o;
  o.enabled = true;
  o.wait = wait;
  o.warmup = warmup;
  o.active = active;
  o.repeat = repeat;
  o.trace = trace;
  return o;
}

// Runs steps 1..n, each with a forward range; returns the steps that were recording.
std::vector<int64_t> run_steps(Profiler& p, int64_t n) {
  std::vector<int64_t> recorded;
  for (int64_t s = 1; s <= n; ++s) {
    p.begin_step(s);
    p.begin_step(s);  // again for the same step: nothing
    if (p.recording()) recorded.push_back(s);
    Profiler::Range r(&p, Phase::Forward);
  }
  return recorded;
}

TEST(Profiler, TheScheduleRecordsTheActiveStepsOfEachCycle) {
  Profiler twice(schedule(1, 1, 2, 2), 0);
  EXPECT_EQ(run_steps(twice, 12), (std::vector<int64_t>{3, 4, 7, 8}));
  EXPECT_EQ(twice.finish().steps, 4);
  Profiler forever(schedule(0, 1, 1, 0), 0);
  EXPECT_EQ(run_steps(forever, 6), (std::vector<int64_t>{2, 4, 6}));
  Profiler never(schedule(5, 1, 1, 1), 0);
  EXPECT_TRUE(run_steps(never, 6).empty());
  EXPECT_EQ(never.finish().steps, 0);
}

TEST(Profiler, NestedRangesCountTheInnermostPhaseOnce) {
  Profiler p(schedule(0, 0, 2, 1), 0);
  for (int64_t s = 1; s <= 2; ++s) {
    p.begin_step(s);
    Profiler::Range v(&p, Phase::Validation);
    torch::randn({200, 200}).matmul(torch::randn({200, 200}));
    Profiler::Range l(&p, Phase::Logging);
    torch::randn({200, 200}).matmul(torch::randn({200, 200}));
  }
  const ProfileResult r = p.finish();
  EXPECT_EQ(r.steps, 2);
  EXPECT_GT(p.phase_seconds(Phase::Validation), 0);
  EXPECT_GT(p.phase_seconds(Phase::Logging), 0);
  EXPECT_EQ(p.phase_seconds(Phase::Forward), 0);
  EXPECT_LE(p.phase_seconds(Phase::Validation) + p.phase_seconds(Phase::Logging),
            p.step_seconds() * (1 + 1e-9));
  EXPECT_TRUE(test::contains(r.table, "profile of 2 steps")) << r.table;
  EXPECT_TRUE(test::contains(r.table, "validation")) << r.table;
}

TEST(Profiler, TheSummaryIsWhatTheReportReads) {
  Profiler p(schedule(0, 0, 3, 1), 1);
  run_steps(p, 3);
  const ProfileResult r = p.finish();
  const report::ProfileSummary s = report::parse_profile_summary(r.summary_json, "summary.json");
  EXPECT_EQ(s.steps, 3);
  ASSERT_EQ(s.phases.size(), size_t(kPhases + 1));  // and "other"
  EXPECT_EQ(s.phases.front().name, "data_wait");
  EXPECT_EQ(s.phases.back().name, "other");
  double share = 0;
  for (const auto& ph : s.phases) share += ph.share;
  EXPECT_NEAR(share, 1.0, 1e-9);
  EXPECT_EQ(nlohmann::json::parse(r.summary_json)["rank"], 1);
  EXPECT_EQ(nlohmann::json::parse(r.summary_json)["device"], "cpu");
  EXPECT_FALSE(nlohmann::json::parse(r.summary_json).contains("peak_device_memory_mb"));
  EXPECT_FALSE(test::contains(r.table, "peak")) << r.table;
  EXPECT_EQ(r.trace_json, "");  // trace: false
}

TEST(Profiler, TheSummaryAndTableSayAGpusPeakMemory) {
  Profiler p(schedule(0, 0, 1, 1), 0);
  run_steps(p, 1);
  const ProfileResult r = p.finish("cuda:0", int64_t{123} * 1024 * 1024 + 5);
  const nlohmann::json j = nlohmann::json::parse(r.summary_json);
  EXPECT_EQ(j["device"], "cuda:0");
  EXPECT_EQ(j["peak_device_memory_mb"], 123);
  EXPECT_TRUE(test::contains(r.table, "peak cuda:0 memory 123 MB")) << r.table;
  EXPECT_EQ(report::parse_profile_summary(r.summary_json, "summary.json").steps, 1);
}

TEST(Profiler, TheTraceNestsOperatorsUnderThePhases) {
  Profiler p(schedule(1, 1, 1, 1, /*trace=*/true), 0);
  for (int64_t s = 1; s <= 4; ++s) {
    p.begin_step(s);
    Profiler::Range f(&p, Phase::Forward);
    torch::randn({8, 8}).relu();
  }
  const ProfileResult r = p.finish();
  const nlohmann::json events = nlohmann::json::parse(r.trace_json)["traceEvents"];
  std::vector<nlohmann::json> phases, ops;
  for (const auto& e : events) {
    if (e.value("cat", "") == "phase") phases.push_back(e);
    if (e.value("cat", "") == "operator") ops.push_back(e);
  }
  ASSERT_EQ(phases.size(), 1u);  // step 3 only: 1 waits, 2 warms up (dropped), 4 is after
  EXPECT_EQ(phases[0]["name"], "unitrain/forward");
  EXPECT_EQ(phases[0]["ph"], "X");
  bool relu_inside = false;
  for (const auto& o : ops) {
    const double ts = o["ts"], dur = o["dur"], pts = phases[0]["ts"], pdur = phases[0]["dur"];
    if (o["name"] == "aten::relu" && o["tid"] == phases[0]["tid"] && ts >= pts &&
        ts + dur <= pts + pdur) {
      relu_inside = true;
    }
  }
  EXPECT_TRUE(relu_inside) << r.trace_json;
}

}  // namespace
}  // namespace unitrain
