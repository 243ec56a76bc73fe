#include "unitrain/threads/thread_governor.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <deque>
#include <vector>

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
  void SetUp() override { before_ = torch::get_num_threads(); }
  void TearDown() override { torch::set_num_threads(before_); }
  int before_ = 1;
};

TEST(ChooseThreadCount, AutoIsTheUsableCpusSharedByTheWorkersNeverTheLoad) {
  const ThreadCount four = choose_thread_count(0, nullptr, 1, 4.0, 0);
  EXPECT_EQ(four.threads, 4);
  EXPECT_TRUE(four.automatic);
  EXPECT_TRUE(four.warning.empty());
  EXPECT_TRUE(contains(four.why,
                       "threads 4 (auto: 4 CPUs usable by this process, 1 worker "
                       "process of this job on this machine; kept for the whole run"))
      << four.why;
  EXPECT_EQ(choose_thread_count(0, nullptr, 2, 4.0, 0).threads, 2);  // shared by the workers
  EXPECT_EQ(choose_thread_count(0, nullptr, 8, 4.0, 0).threads, 1);  // never fewer than one
  EXPECT_EQ(choose_thread_count(0, nullptr, 3, 2.0, 0).threads, 1);
  // A cgroup quota: a CPU 70% available counts, 60% does not.
  EXPECT_EQ(choose_thread_count(0, nullptr, 1, 1.5, 0).threads, 1);
  EXPECT_EQ(choose_thread_count(0, nullptr, 1, 1.7, 0).threads, 2);
}

TEST(ChooseThreadCount, AResumeKeepsTheCountItStartedWith) {
  // Fewer or more CPUs now: the run's count, so that its sums split as before.
  const ThreadCount kept = choose_thread_count(0, nullptr, 1, 1.0, 2);
  EXPECT_EQ(kept.threads, 2);
  EXPECT_TRUE(kept.automatic);
  EXPECT_TRUE(kept.warning.empty());
  EXPECT_TRUE(contains(kept.why,
                       "threads 2 (auto: the count this run started with, kept so "
                       "that its arithmetic stays the same; 1 CPU usable"))
      << kept.why;
  EXPECT_EQ(choose_thread_count(0, nullptr, 1, 8.0, 1).threads, 1);
}

TEST(ChooseThreadCount, AGivenCountIsKeptAndSaysWhenAResumeIsThenNotBitwise) {
  const ThreadCount fixed = choose_thread_count(3, nullptr, 1, 2.0, 0);
  EXPECT_EQ(fixed.threads, 3);
  EXPECT_FALSE(fixed.automatic);
  EXPECT_EQ(fixed.why, "threads 3 (train.threads)");
  EXPECT_TRUE(fixed.warning.empty());
  EXPECT_TRUE(choose_thread_count(3, nullptr, 1, 2.0, 3).warning.empty());  // the same count
  const ThreadCount other = choose_thread_count(1, nullptr, 1, 2.0, 2);
  EXPECT_EQ(other.threads, 1);
  EXPECT_TRUE(contains(other.warning,
                       "train.threads 1: this run computed with 2 threads before "
                       "this resume"))
      << other.warning;
  EXPECT_TRUE(contains(other.warning, "not bitwise equal to one that never stopped"));

  // OMP_NUM_THREADS wins over auto, as a given count; train.threads over both.
  const ThreadCount omp = choose_thread_count(0, "1", 1, 2.0, 2);
  EXPECT_EQ(omp.threads, 1);
  EXPECT_FALSE(omp.automatic);
  EXPECT_TRUE(contains(omp.why, "OMP_NUM_THREADS=1")) << omp.why;
  EXPECT_TRUE(contains(omp.warning, "OMP_NUM_THREADS=1: this run computed with 2 threads"));
  EXPECT_EQ(choose_thread_count(2, "1", 1, 2.0, 0).threads, 2);
  EXPECT_EQ(choose_thread_count(0, "", 1, 2.0, 0).threads, 2);  // set but empty: auto
}

TEST_F(ThreadGovernorTest, TheCountStaysAndTheTeamsPlaceFollowsTheLoad) {
  auto load = std::make_shared<Readings>(Readings{{0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0}});
  std::vector<int64_t> placed;
  ThreadGovernor g(
      choose_thread_count(0, nullptr, 1, 2.0, 0), 1, 2.0, [load] { return (*load)(); },
      [&placed](int64_t cpus) { placed.push_back(cpus); }, std::chrono::seconds(0));
  EXPECT_EQ(g.threads(), 2);
  EXPECT_EQ(torch::get_num_threads(), 2);
  EXPECT_EQ(g.confined_to(), 0);
  EXPECT_TRUE(contains(g.placement(),
                       "placement: follows other programs' load (they kept 0.0 of 2 CPUs busy: "
                       "threads on every CPU); the count stays 2"))
      << g.placement();
  auto changed = g.follow();  // another program took a CPU: onto the other one, at once
  ASSERT_TRUE(changed.has_value());
  EXPECT_EQ(*changed,
            "threads on 1 CPU, sleeping while they wait: other programs keep 1.0 of 2 CPUs busy "
            "(the count stays 2, and with it the numbers)");
  EXPECT_EQ(g.confined_to(), 1);
  EXPECT_FALSE(g.follow().has_value());  // free once: not yet
  EXPECT_FALSE(g.follow().has_value());  // busy again: the vote starts over
  EXPECT_FALSE(g.follow().has_value());  // free once
  changed = g.follow();                  // free twice in a row: every CPU again
  ASSERT_TRUE(changed.has_value());
  EXPECT_TRUE(contains(*changed, "threads on every CPU: other programs keep 0.0")) << *changed;
  EXPECT_FALSE(g.follow().has_value());
  EXPECT_EQ(placed, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(g.threads(), 2);
  EXPECT_EQ(torch::get_num_threads(), 2);  // never changed
}

TEST_F(ThreadGovernorTest, FewerCpusAtOnceMoreWhenConfirmed) {
  // 4 threads on 4 CPUs: 1, then 2, then 1 busy, then none.
  auto load = std::make_shared<Readings>(Readings{{1.0, 2.0, 1.0, 1.0, 0.0, 0.0}});
  std::vector<int64_t> placed;
  ThreadGovernor g(
      choose_thread_count(0, nullptr, 1, 4.0, 0), 1, 4.0, [load] { return (*load)(); },
      [&placed](int64_t cpus) { placed.push_back(cpus); }, std::chrono::seconds(0));
  EXPECT_EQ(g.confined_to(), 3);
  EXPECT_TRUE(g.follow().has_value());   // 2 busy: onto 2 CPUs at once
  EXPECT_FALSE(g.follow().has_value());  // 1 busy once
  EXPECT_TRUE(g.follow().has_value());   // twice: onto 3
  EXPECT_FALSE(g.follow().has_value());  // none busy once
  EXPECT_TRUE(g.follow().has_value());   // twice: every CPU
  EXPECT_EQ(placed, (std::vector<int64_t>{3, 2, 3, 0}));
}

TEST_F(ThreadGovernorTest, BusyAtTheStartIsConfinedFromTheStartAndPutBack) {
  std::vector<int64_t> placed;
  {
    ThreadGovernor g(
        choose_thread_count(0, nullptr, 1, 2.0, 0), 1, 2.0, [] { return 0.9; },
        [&placed](int64_t cpus) { placed.push_back(cpus); }, std::chrono::seconds(0));
    EXPECT_EQ(g.confined_to(), 1);
    EXPECT_TRUE(contains(g.placement(), "threads on 1 CPU, sleeping while they wait"))
        << g.placement();
    EXPECT_EQ(placed, (std::vector<int64_t>{1}));
  }
  EXPECT_EQ(placed, (std::vector<int64_t>{1, 0}));  // the governor puts the team back
  // A recorded count above the CPUs now: always confined to what there is.
  ThreadGovernor more(
      choose_thread_count(0, nullptr, 1, 1.0, 2), 1, 1.0, [] { return 0.0; }, [](int64_t) {},
      std::chrono::seconds(0));
  EXPECT_EQ(more.confined_to(), 1);
}

TEST_F(ThreadGovernorTest, ReadsTheLoadOnlyEveryInterval) {
  int reads = 0;
  ThreadGovernor g(
      choose_thread_count(0, nullptr, 1, 2.0, 0), 1, 2.0,
      [&reads] { return ++reads > 1 ? 1.0 : 0.0; }, [](int64_t) {}, std::chrono::hours(1));
  EXPECT_EQ(reads, 1);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(g.follow().has_value());
  EXPECT_EQ(reads, 1);
}

TEST_F(ThreadGovernorTest, OneThreadOrNoPlacementNeverReadsTheLoad) {
  int reads = 0, placements = 0;
  ThreadGovernor one(
      choose_thread_count(1, nullptr, 1, 2.0, 0), 1, 2.0, [&reads] { return double(++reads); },
      [&placements](int64_t) { ++placements; }, std::chrono::seconds(0));
  EXPECT_EQ(torch::get_num_threads(), 1);
  EXPECT_FALSE(one.follow().has_value());
  EXPECT_TRUE(one.placement().empty());
  ThreadGovernor fixed(
      choose_thread_count(2, nullptr, 1, 2.0, 0), 1, 2.0, [&reads] { return double(++reads); },
      ThreadGovernor::Placement(), std::chrono::seconds(0));
  EXPECT_FALSE(fixed.follow().has_value());
  EXPECT_EQ(reads, 0);
  EXPECT_EQ(placements, 0);
}

}  // namespace
}  // namespace unitrain
