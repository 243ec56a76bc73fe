#include "unitrain/data/synthetic_dataset.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace unitrain {
namespace {

Batch all_of(const Dataset& d) {
  std::vector<int64_t> indices(static_cast<size_t>(d.size()));
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int64_t>(i);
  return d.get_batch(indices);
}

TEST(SyntheticDataset, SameSeedSameDataOtherSeedOtherData) {
  SyntheticOptions o;
  o.n = 64;
  o.features = 5;
  o.classes = 3;
  o.seed = 7;
  Batch a = all_of(*make_synthetic(o));
  Batch b = all_of(*make_synthetic(o));
  EXPECT_TRUE(torch::equal(a.at("x"), b.at("x")));
  EXPECT_TRUE(torch::equal(a.at("y"), b.at("y")));
  o.seed = 8;
  Batch c = all_of(*make_synthetic(o));
  EXPECT_FALSE(torch::equal(a.at("x"), c.at("x")));
  EXPECT_EQ(a.at("x").sizes(), (std::vector<int64_t>{64, 5}));
  EXPECT_EQ(a.at("y").scalar_type(), torch::kInt64);
  EXPECT_GE(a.at("y").min().item<int64_t>(), 0);
  EXPECT_LE(a.at("y").max().item<int64_t>(), 2);
  EXPECT_EQ(std::get<0>(at::_unique(a.at("y"))).numel(), 3);  // every class occurs
}

TEST(SyntheticDataset, ClassificationIsLinearlyLearnable) {
  torch::manual_seed(0);
  SyntheticOptions o;
  o.n = 512;
  o.features = 8;
  o.classes = 4;
  Batch data = all_of(*make_synthetic(o));
  torch::Tensor w = torch::zeros({8, 4}, torch::requires_grad());
  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(1.0));
  for (int step = 0; step < 200; ++step) {
    sgd.zero_grad();
    torch::Tensor loss = torch::cross_entropy_loss(data.at("x").matmul(w), data.at("y"));
    loss.backward();
    sgd.step();
  }
  double accuracy =
      (data.at("x").matmul(w).argmax(1) == data.at("y")).to(torch::kFloat64).mean().item<double>();
  EXPECT_GT(accuracy, 0.9);
}

TEST(SyntheticDataset, RegressionIsLinearPlusNoise) {
  SyntheticOptions o;
  o.task = "regression";
  o.n = 200;
  o.features = 6;
  o.outputs = 2;
  o.noise = 0.0;
  Batch data = all_of(*make_synthetic(o));
  EXPECT_EQ(data.at("y").sizes(), (std::vector<int64_t>{200, 2}));
  EXPECT_EQ(data.at("y").scalar_type(), torch::kFloat32);
  torch::Tensor x = data.at("x").to(torch::kFloat64), y = data.at("y").to(torch::kFloat64);
  torch::Tensor w = std::get<0>(torch::linalg_lstsq(x, y));
  EXPECT_LT((x.matmul(w) - y).abs().max().item<double>(), 1e-4);
  o.noise = 0.5;
  Batch noisy = all_of(*make_synthetic(o));
  torch::Tensor residual = noisy.at("y") - data.at("y");  // same x and w: only the noise differs
  EXPECT_NEAR(residual.std().item<double>(), 0.5, 0.08);
}

TEST(SyntheticDataset, ImageShapedExamples) {
  SyntheticOptions o;
  o.n = 10;
  o.shape = {1, 4, 4};
  o.classes = 10;
  DatasetPtr d = make_synthetic(o);
  EXPECT_EQ(d->get(3).at("x").sizes(), (std::vector<int64_t>{1, 4, 4}));
  EXPECT_EQ(d->get_batch({1, 2}).at("x").sizes(), (std::vector<int64_t>{2, 1, 4, 4}));
  EXPECT_EQ(d->info().at("num_features"), 16);
}

}  // namespace
}  // namespace unitrain
