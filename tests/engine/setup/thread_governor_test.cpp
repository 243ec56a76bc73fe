#include "unitrain/engine/setup/thread_governor.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <deque>

#include "test_util.h"

namespace unitrain {
namespace {

using test::contains;

/// Readings served in order, as a LoadReader.
struct Readings {
  std::deque<double> values;
  double operator()() {
    const double v = values.front();
    if (values.size() > 1) values.pop_front();
    return v;
  }
};

class ThreadGovernorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    before_ = torch::get_num_threads();
    ::unsetenv("OMP_NUM_THREADS");
  }
  void TearDown() override { torch::set_num_threads(before_); }
  int before_ = 1;
};

TEST_F(ThreadGovernorTest, AutoStartsFromTheFreeCpusAndSaysWhy) {
  auto load = std::make_shared<Readings>(Readings{{0.1}});
  ThreadGovernor quiet(
      0, 1, 4.0, [load] { return (*load)(); }, std::chrono::seconds(0));
  EXPECT_EQ(quiet.threads(), 4);
  EXPECT_EQ(torch::get_num_threads(), 4);
  EXPECT_TRUE(contains(quiet.why(),
                       "threads 4 (auto: 4 CPUs usable by this process, other "
                       "programs kept 0.1 busy, 1 worker process"))
      << quiet.why();

  // Two programs busy: two CPUs left; a CPU 70% free counts, 60% does not.
  EXPECT_EQ(ThreadGovernor(0, 1, 4.0, [] { return 2.0; }).threads(), 2);
  EXPECT_EQ(ThreadGovernor(0, 1, 4.0, [] { return 1.3; }).threads(), 3);
  EXPECT_EQ(ThreadGovernor(0, 1, 4.0, [] { return 1.4; }).threads(), 2);
  // Shared by the job's workers on this machine; never fewer than one.
  EXPECT_EQ(ThreadGovernor(0, 2, 4.0, [] { return 0.0; }).threads(), 2);
  EXPECT_EQ(ThreadGovernor(0, 8, 4.0, [] { return 0.0; }).threads(), 1);
  EXPECT_EQ(ThreadGovernor(0, 1, 2.0, [] { return 5.0; }).threads(), 1);
  EXPECT_EQ(ThreadGovernor(0, 1, 1.5, [] { return 0.0; }).threads(), 1);  // a cgroup quota
}

TEST_F(ThreadGovernorTest, AutoFollowsTheLoadDownAtOnceAndUpWhenConfirmed) {
  auto load = std::make_shared<Readings>(Readings{{0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0}});
  ThreadGovernor g(
      0, 1, 2.0, [load] { return (*load)(); }, std::chrono::seconds(0));
  EXPECT_EQ(g.threads(), 2);
  auto changed = g.follow();  // another program took a CPU: one thread, at once
  ASSERT_TRUE(changed.has_value());
  EXPECT_EQ(*changed,
            "threads 2 -> 1: other programs keep 1.0 of 2 CPUs busy (train.threads: "
            "auto; set a number to keep one count)");
  EXPECT_EQ(torch::get_num_threads(), 1);
  EXPECT_FALSE(g.follow().has_value());  // free once: not yet
  EXPECT_FALSE(g.follow().has_value());  // busy again: the vote starts over
  EXPECT_FALSE(g.follow().has_value());  // free once
  changed = g.follow();                  // free twice in a row: back to two
  ASSERT_TRUE(changed.has_value());
  EXPECT_TRUE(contains(*changed, "threads 1 -> 2")) << *changed;
  EXPECT_EQ(g.threads(), 2);
  EXPECT_FALSE(g.follow().has_value());
}

TEST_F(ThreadGovernorTest, ReadsTheLoadOnlyEveryInterval) {
  int reads = 0;
  ThreadGovernor g(
      0, 1, 2.0, [&reads] { return ++reads > 1 ? 1.0 : 0.0; }, std::chrono::hours(1));
  EXPECT_EQ(reads, 1);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(g.follow().has_value());
  EXPECT_EQ(reads, 1);
}

TEST_F(ThreadGovernorTest, ANumberOrOmpNumThreadsIsKept) {
  int reads = 0;
  ThreadGovernor fixed(
      3, 1, 2.0, [&reads] { return double(++reads); }, std::chrono::seconds(0));
  EXPECT_EQ(fixed.threads(), 3);
  EXPECT_EQ(torch::get_num_threads(), 3);
  EXPECT_EQ(fixed.why(), "threads 3 (train.threads)");
  EXPECT_FALSE(fixed.follow().has_value());
  EXPECT_EQ(reads, 0);

  ::setenv("OMP_NUM_THREADS", "1", 1);
  ThreadGovernor omp(
      0, 1, 2.0, [&reads] { return double(++reads); }, std::chrono::seconds(0));
  ::unsetenv("OMP_NUM_THREADS");
  EXPECT_EQ(omp.threads(), 1);
  EXPECT_TRUE(contains(omp.why(), "OMP_NUM_THREADS=1")) << omp.why();
  EXPECT_FALSE(omp.follow().has_value());
  EXPECT_EQ(reads, 0);
}

}  // namespace
}  // namespace unitrain
