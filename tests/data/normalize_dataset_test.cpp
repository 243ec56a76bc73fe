#include "unitrain/data/normalize_dataset.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data_test_util.h"
#include "unitrain/data/tensor_dataset.h"

namespace unitrain {
namespace {

std::vector<int64_t> all_indices(int64_t n) {
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = i;
  return out;
}

TEST(Normalize, FeatureStatsMakeZeroMeanUnitStd) {
  torch::manual_seed(3);
  torch::Tensor x = torch::randn({500, 3}) * torch::tensor({2.0f, 0.5f, 10.0f}) +
                    torch::tensor({1.0f, -3.0f, 100.0f});
  auto data = std::make_shared<TensorDataset>(Batch{{"x", x}, {"y", torch::zeros({500})}});
  ChannelStats stats = channel_stats(*data, "x");
  ASSERT_EQ(stats.mean.size(), 3u);
  torch::Tensor x64 = x.to(torch::kFloat64);
  for (int64_t c = 0; c < 3; ++c) {
    EXPECT_NEAR(stats.mean[c], x64.select(1, c).mean().item<double>(), 1e-9);
    EXPECT_NEAR(stats.std[c], x64.select(1, c).std(/*unbiased=*/false).item<double>(), 1e-9);
  }
  NormalizeDataset norm(data, "x", stats.mean, stats.std);
  torch::Tensor out = norm.get_batch(all_indices(500)).at("x");
  EXPECT_TRUE(torch::allclose(out.mean(0), torch::zeros({3}), 0, 1e-4));
  EXPECT_TRUE(torch::allclose(out.std(0, /*unbiased=*/false), torch::ones({3}), 0, 1e-4));
  EXPECT_TRUE(torch::allclose(norm.get(7).at("x"), out[7]));
  EXPECT_TRUE(torch::equal(norm.get(7).at("y"), data->get(7).at("y")));  // other keys untouched
}

TEST(Normalize, ImageChannelsAreDimZero) {
  // Channel 0 holds 0..., channel 1 holds 10 + ...: stats per channel over H, W and examples.
  torch::Tensor x = torch::arange(2 * 2 * 2 * 2, torch::kFloat32).view({2, 2, 2, 2});
  x.select(1, 1).add_(10);
  auto data = std::make_shared<TensorDataset>(Batch{{"x", x}});
  ChannelStats stats = channel_stats(*data, "x");
  ASSERT_EQ(stats.mean.size(), 2u);
  EXPECT_DOUBLE_EQ(stats.mean[0], (0 + 1 + 2 + 3 + 8 + 9 + 10 + 11) / 8.0);
  EXPECT_DOUBLE_EQ(stats.mean[1], (14 + 15 + 16 + 17 + 22 + 23 + 24 + 25) / 8.0);
  NormalizeDataset norm(data, "x", {1.0, 2.0}, {2.0, 4.0});
  torch::Tensor e = norm.get(0).at("x");
  EXPECT_FLOAT_EQ(e[0][0][1].item<float>(), (1.0f - 1.0f) / 2.0f);
  EXPECT_FLOAT_EQ(e[1][1][1].item<float>(), (17.0f - 2.0f) / 4.0f);
  EXPECT_TRUE(torch::allclose(norm.get_batch({1, 0}).at("x")[1], e));
}

TEST(Normalize, ConstantChannelIsCentredNotScaled) {
  torch::Tensor x = torch::stack({torch::full({4}, 5.0f), torch::arange(4, torch::kFloat32)}, 1);
  auto data = std::make_shared<TensorDataset>(Batch{{"x", x}});
  ChannelStats stats = channel_stats(*data, "x");
  EXPECT_DOUBLE_EQ(stats.mean[0], 5.0);
  EXPECT_DOUBLE_EQ(stats.std[0], 1.0);
}

TEST(Normalize, Errors) {
  auto data = std::make_shared<TensorDataset>(
      Batch{{"x", torch::zeros({4, 3})}, {"tokens", torch::zeros({4, 2}, torch::kInt64)}});
  std::string msg = test::config_error_of([&] { NormalizeDataset(data, "x", {0, 0}, {1, 1}); });
  EXPECT_NE(msg.find("data.normalize.mean has 2 values but 'x' has 3 channels"), std::string::npos)
      << msg;
  msg = test::config_error_of([&] { NormalizeDataset(data, "x", {0, 0, 0}, {1, 0, 1}); });
  EXPECT_NE(msg.find("data.normalize.std[1] must be > 0"), std::string::npos) << msg;
  msg = test::config_error_of([&] { NormalizeDataset(data, "tokens", {0, 0}, {1, 1}); });
  EXPECT_NE(msg.find("only floating tensors"), std::string::npos) << msg;
  msg = test::config_error_of([&] { NormalizeDataset(data, "z", {0}, {1}); });
  EXPECT_NE(msg.find("no tensor named 'z'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace unitrain
