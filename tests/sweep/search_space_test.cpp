#include "unitrain/sweep/search_space.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "test_util.h"
#include "unitrain/core/config.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

SearchSpace space_of(const std::string& yaml) {
  return SearchSpace::from_config(Config::from_string(yaml));
}

std::string space_error(const std::string& yaml) {
  try {
    space_of(yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(SearchSpace, GridIsTheProductWithTheLastKeyFastest) {
  const SearchSpace s = space_of("optimizer.lr: {grid: [0.1, 0.01]}\nseed: {grid: [1, 2, 3]}");
  ASSERT_EQ(s.grid_size(), 6);
  EXPECT_TRUE(s.grid_only());
  const TrialParameters t0 = s.trial(7, 0), t1 = s.trial(7, 1), t3 = s.trial(7, 3);
  EXPECT_EQ(t0, (TrialParameters{{"optimizer.lr", "0.1"}, {"seed", "1"}}));
  EXPECT_EQ(t1, (TrialParameters{{"optimizer.lr", "0.1"}, {"seed", "2"}}));
  EXPECT_EQ(t3, (TrialParameters{{"optimizer.lr", "0.01"}, {"seed", "1"}}));
  EXPECT_EQ(s.trial(7, 6), t0);  // past the grid: the points again
}

TEST(SearchSpace, AShuffledGridVisitsEveryPointOncePerRound) {
  const Config yaml = Config::from_string("a: {grid: [1, 2, 3, 4, 5]}\nb: {grid: [x, y]}");
  const SearchSpace in_order = SearchSpace::from_config(yaml);
  const SearchSpace shuffled = SearchSpace::from_config(yaml, SearchSpace::GridOrder::Shuffled);
  std::set<TrialParameters> points, seen;
  std::vector<TrialParameters> order, other_seed;
  for (int64_t k = 0; k < 10; ++k) {
    points.insert(in_order.trial(9, k));
    seen.insert(shuffled.trial(9, k));
    order.push_back(shuffled.trial(9, k));
    other_seed.push_back(shuffled.trial(10, k));
    EXPECT_EQ(shuffled.trial(9, k + 10), shuffled.trial(9, k));
  }
  EXPECT_EQ(seen, points);  // every point, once
  std::vector<TrialParameters> ordered;
  for (int64_t k = 0; k < 10; ++k) ordered.push_back(in_order.trial(9, k));
  EXPECT_NE(order, ordered);
  EXPECT_NE(order, other_seed);
}

TEST(SearchSpace, DrawsDependOnSeedAndTrialOnly) {
  const SearchSpace s = space_of(
      "optimizer.lr: {loguniform: [1.0e-4, 1.0e-1]}\nmodel.args.dropout: {uniform: [0, 0.5]}\n"
      "data.loader.batch_size: {int: [16, 18]}\nmodel.args.activation: {choice: [relu, tanh]}");
  EXPECT_EQ(s.trial(3, 5), s.trial(3, 5));
  EXPECT_NE(s.trial(3, 5), s.trial(4, 5));
  EXPECT_NE(s.trial(3, 5), s.trial(3, 6));
  std::set<std::string> batch_sizes, activations;
  for (int64_t k = 0; k < 200; ++k) {
    const TrialParameters t = s.trial(3, k);
    const double lr = std::stod(t[0].second), dropout = std::stod(t[1].second);
    EXPECT_GE(lr, 1e-4);
    EXPECT_LE(lr, 1e-1);
    EXPECT_GE(dropout, 0);
    EXPECT_LT(dropout, 0.5);
    batch_sizes.insert(t[2].second);
    activations.insert(t[3].second);
  }
  EXPECT_EQ(batch_sizes, (std::set<std::string>{"16", "17", "18"}));
  EXPECT_EQ(activations, (std::set<std::string>{"relu", "tanh"}));
}

TEST(SearchSpace, LoguniformSpreadsOverTheDecades) {
  const SearchSpace s = space_of("optimizer.lr: {loguniform: [1.0e-4, 1.0]}");
  int below = 0;
  for (int64_t k = 0; k < 400; ++k) below += std::stod(s.trial(1, k)[0].second) < 1e-2;
  EXPECT_GT(below, 150);  // half of the decades lie below 1e-2
  EXPECT_LT(below, 250);
}

TEST(SearchSpace, BadDistributionsNameTheKey) {
  using test::contains;
  EXPECT_TRUE(contains(space_error("optimizer.lr: {uniform: [0.1, 0.01]}"),
                       "space.optimizer.lr.uniform: empty range"));
  EXPECT_TRUE(contains(space_error("optimizer.lr: {choice: []}"),
                       "space.optimizer.lr.choice: the list is empty"));
  EXPECT_TRUE(contains(space_error("optimizer.lr: {uniform: [a, 1]}"),
                       "space.optimizer.lr.uniform: expected a number, got 'a'"));
  EXPECT_TRUE(contains(space_error("optimizer.lr: {normal: [0, 1]}"),
                       "space.optimizer.lr: unknown distribution 'normal'"));
  EXPECT_TRUE(contains(space_error("optimizer.lr: {loguniform: [0, 1]}"),
                       "space.optimizer.lr.loguniform: loguniform needs lo > 0"));
  EXPECT_TRUE(contains(space_error("seed: {int: [1.5, 3]}"), "space.seed.int: int needs whole"));
  EXPECT_TRUE(contains(space_error("{}"), "space: expected a map"));
}

}  // namespace
}  // namespace unitrain
