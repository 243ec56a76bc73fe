#include "unitrain/checkpoint/frozen_weights.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

/// A module of two layers, the first frozen (a base), the second trained (an adapter).
struct TwoLayers : torch::nn::Module {
  TwoLayers() {
    base = register_module("base", torch::nn::Linear(3, 4));
    adapter = register_module("adapter", torch::nn::Linear(4, 2));
    for (auto& p : base->parameters()) p.requires_grad_(false);
  }
  torch::nn::Linear base{nullptr}, adapter{nullptr};
};

NamedTensors state_of(torch::nn::Module& m) {
  NamedTensors out;
  for (const auto& p : m.named_parameters()) out.emplace_back(p.key(), p.value());
  return out;
}

TEST(FrozenWeights, TrainableStateKeepsTheTrainedAndWithFrozenRestoresTheRest) {
  TwoLayers m;
  const NamedTensors trained = trainable_state(m, state_of(m));
  ASSERT_EQ(trained.size(), 2u);
  EXPECT_EQ(trained[0].first, "adapter.weight");
  EXPECT_EQ(trained[1].first, "adapter.bias");
  const NamedTensors whole = with_frozen_parameters(m, trained);
  ASSERT_EQ(whole.size(), 4u);
  EXPECT_EQ(whole[2].first, "base.weight");
  EXPECT_TRUE(torch::equal(whole[2].second, m.base->weight));
}

TEST(FrozenWeights, FingerprintFollowsTheFrozenValuesOnly) {
  torch::manual_seed(1);
  TwoLayers m;
  const std::string before = frozen_fingerprint(m);
  EXPECT_TRUE(test::contains(before, "\"tensors\":2")) << before;
  EXPECT_TRUE(test::contains(before, "\"elements\":16")) << before;
  torch::NoGradGuard no_grad;
  m.adapter->weight.add_(1.0);  // training moves the adapter: the fingerprint stays
  EXPECT_EQ(frozen_fingerprint(m), before);
  // bf16-true's float32 masters in place of the module's own: the same values, the same print.
  NamedTensors masters = state_of(m);
  EXPECT_EQ(frozen_fingerprint(m, &masters), before);
  m.base->bias[0].add_(1e-3);  // the base changed
  const std::string after = frozen_fingerprint(m);
  EXPECT_NE(after, before);
  const std::string message = test::config_error_of(
      [&] { check_frozen_fingerprint(before, after, "step-4/frozen_weights.json"); });
  EXPECT_TRUE(test::contains(message, "step-4/frozen_weights.json")) << message;
  EXPECT_TRUE(test::contains(message, "changed since")) << message;
  EXPECT_EQ(test::config_error_of([&] { check_frozen_fingerprint(after, after, "f"); }),
            "(no error)");
}

}  // namespace
}  // namespace unitrain
