#include "unitrain/data/subset_dataset.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <set>

#include "data_test_util.h"
#include "unitrain/data/tensor_dataset.h"

namespace unitrain {
namespace {

DatasetPtr numbered_x(int64_t n) {
  return std::make_shared<TensorDataset>(Batch{{"x", torch::arange(n, torch::kInt64)}});
}

std::vector<int64_t> values(const Dataset& d) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < d.size(); ++i) out.push_back(d.get(i).at("x").item<int64_t>());
  return out;
}

TEST(SubsetDataset, MapsIndicesAndBatches) {
  SubsetDataset s(numbered_x(10), {7, 2, 5});
  EXPECT_EQ(s.size(), 3);
  EXPECT_EQ(values(s), (std::vector<int64_t>{7, 2, 5}));
  EXPECT_TRUE(torch::equal(s.get_batch({2, 0}).at("x"), torch::tensor({5, 7}, torch::kInt64)));
  std::string msg = test::config_error_of([] { SubsetDataset(numbered_x(3), {0, 3}); });
  EXPECT_NE(msg.find("out of range"), std::string::npos) << msg;
}

TEST(RandomSplit, DeterministicDisjointAndComplete) {
  DatasetPtr data = numbered_x(100);
  Split a = random_split(data, 0.2, 42);
  Split b = random_split(data, 0.2, 42);
  Split c = random_split(data, 0.2, 43);
  EXPECT_EQ(a.held_out->size(), 20);
  EXPECT_EQ(a.rest->size(), 80);
  EXPECT_EQ(values(*a.held_out), values(*b.held_out));
  EXPECT_EQ(values(*a.rest), values(*b.rest));
  EXPECT_NE(values(*a.held_out), values(*c.held_out));
  std::set<int64_t> all;
  for (int64_t v : values(*a.rest)) all.insert(v);
  for (int64_t v : values(*a.held_out)) EXPECT_TRUE(all.insert(v).second) << v << " in both";
  EXPECT_EQ(all.size(), 100u);
  // Not simply the first or last 20.
  std::vector<int64_t> held = values(*a.held_out);
  EXPECT_NE(held.front(), 0);
  EXPECT_NE(held.back() - held.front(), 19);
}

TEST(RandomSplit, FeistelPartsArePermutationRangesAndFisherYatesKeepsTheOldSplit) {
  DatasetPtr data = numbered_x(100);
  const SeededPermutation perm(ShuffleAlgorithm::Feistel, 100, mix_seed(42, 0x5u));
  Split a = random_split(data, 0.2, 42);
  std::vector<int64_t> held, rest;
  for (int64_t i = 0; i < 20; ++i) held.push_back(perm(i));
  for (int64_t i = 20; i < 100; ++i) rest.push_back(perm(i));
  EXPECT_EQ(values(*a.held_out), held);
  EXPECT_EQ(values(*a.rest), rest);
  EXPECT_EQ(a.rest->get_batch({1, 0}).at("x")[0].item<int64_t>(), perm(21));
  // Runs started before Feistel: the Fisher-Yates split, each part in the original order.
  Split old = random_split(data, 0.2, 42, "data.validation_ratio", ShuffleAlgorithm::FisherYates);
  std::vector<int64_t> listed = seeded_permutation(100, mix_seed(42, 0x5u));
  std::vector<int64_t> old_held(listed.begin(), listed.begin() + 20);
  std::sort(old_held.begin(), old_held.end());
  EXPECT_EQ(values(*old.held_out), old_held);
}

TEST(RandomSplit, RatioErrors) {
  std::string msg = test::config_error_of([] { random_split(numbered_x(10), 1.0, 1); });
  EXPECT_NE(msg.find("data.validation_ratio"), std::string::npos) << msg;
  msg = test::config_error_of([] { random_split(numbered_x(1), 0.5, 1); });
  EXPECT_NE(msg.find("leaves none for training"), std::string::npos) << msg;
  EXPECT_EQ(random_split(numbered_x(10), 0.01, 1).held_out->size(), 1);  // at least one
}

}  // namespace
}  // namespace unitrain
