#include "unitrain/engine/callbacks/ema.h"

#include <gtest/gtest.h>

#include "engine/regression_fixture.h"
#include "test_util.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {
namespace {

// Records the weights after each update and at each validation's start (after Ema's).
struct Watch : Callback {
  std::vector<torch::Tensor> start;
  std::vector<std::vector<torch::Tensor>> updates, validated;
  static std::vector<torch::Tensor> weights(Trainer& t) {
    std::vector<torch::Tensor> out;
    for (const auto& p : t.module()->weights().parameters()) out.push_back(p.detach().clone());
    return out;
  }
  void on_fit_start(Trainer& t) override { start = weights(t); }
  void on_after_optimizer_step(Trainer& t, bool) override { updates.push_back(weights(t)); }
  void on_validation_start(Trainer& t) override { validated.push_back(weights(t)); }
};

TEST(Ema, AveragesEveryUpdateAndValidatesWithTheAverage) {
  EmaOptions o;
  o.decay = 0.75;
  o.every = 2;
  auto ema = std::make_shared<Ema>(o);
  auto watch = std::make_shared<Watch>();
  Trainer trainer(test::base_config(test::temp_dir() + "/run", "checkpoint: {enabled: false}\n"));
  trainer.add_callback(ema);
  trainer.add_callback(watch);
  test::Regression module;
  auto data = test::regression_data(64);
  trainer.fit(module, data, data);
  // The same arithmetic, in the same order: bitwise equal.
  std::vector<torch::Tensor> expect = watch->start;
  for (size_t k = 1; k < watch->updates.size(); k += 2) {  // steps 2, 4, ...
    for (size_t i = 0; i < expect.size(); ++i)
      expect[i].mul_(0.75).add_(watch->updates[k][i], 0.25);
  }
  ASSERT_EQ(ema->values().size(), expect.size());
  for (size_t i = 0; i < expect.size(); ++i) EXPECT_TRUE(torch::equal(ema->values()[i], expect[i]));
  // Validation ran with the average of its time, and training went on with its own weights.
  ASSERT_EQ(watch->validated.size(), 2u);  // after epoch 1 and at the end
  for (size_t i = 0; i < expect.size(); ++i) {
    EXPECT_TRUE(torch::equal(watch->validated[1][i], expect[i]));
    EXPECT_TRUE(torch::equal(module.parameters()[i], watch->updates.back()[i]));
  }
}

TEST(Ema, AFrozenParameterIsItsOwnAverageNeitherKeptNorSaved) {
  auto ema = std::make_shared<Ema>(EmaOptions{});
  Trainer trainer(test::base_config(test::temp_dir() + "/run", "checkpoint: {enabled: false}\n"));
  trainer.add_callback(ema);
  test::Regression module;
  module.fc->bias.set_requires_grad(false);  // as LoRA's base
  auto data = test::regression_data(32);
  trainer.fit(module, data, data);
  ASSERT_EQ(ema->values().size(), 1u);  // fc.weight's average alone
  CheckpointEntries entries;
  ema->on_save_checkpoint(trainer, entries);
  const std::string& bytes = entries.at(checkpoint_files::kEmaEntry);
  const NamedTensors saved = load_tensor_dict({bytes.begin(), bytes.end()}, "ema.pt");
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved[0].first, "fc.weight");
  // Loaded for validation: the weight averaged, the frozen bias as the module holds it.
  test::Regression other;
  other.fc->bias.set_requires_grad(false);
  EXPECT_TRUE(ema->on_load_validated_weights(trainer, other.weights(), entries));
  EXPECT_TRUE(torch::equal(other.fc->weight, ema->values()[0]));
}

TEST(Ema, OptionsAreCheckedByTheirDeclaration) {
  const auto& o = options_of<EmaOptions>();
  EXPECT_TRUE(test::contains(
      test::error_of<ConfigError>([&] { o.parse(Config::from_string("decay: 1.0")); }), "decay"));
  EXPECT_EQ(o.parse(Config::from_string("every: 3")).every, 3);
}

}  // namespace
}  // namespace unitrain
