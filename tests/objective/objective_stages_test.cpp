// ObjectiveModule cut into pipeline stages: its model's units run in two ranges give the logits
// and loss of the whole forward, and what cannot be cut is refused by key.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_util.h"
#include "unitrain/models/transformer_lm.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {
namespace {

Config objective_section(const std::string& yaml) {
  return Config(Config::from_string(yaml).node(), "objective");
}

TEST(ObjectiveStages, TwoRangesOfUnitsGiveTheWholeForwardsLoss) {
  torch::manual_seed(1);
  auto lm = std::make_shared<models::TransformerLmImpl>(
      models::TransformerLmOptions(11).d_model(8).layers(2).heads(2).seq_len(6).dropout(0));
  ObjectiveModule module(lm, objective_section("losses: [{type: cross_entropy}]"));
  EXPECT_EQ(module.stage_refusal(), std::nullopt);
  EXPECT_EQ(module.units().size(), 4u);
  EXPECT_EQ(module.unit_costs().front(), 0);  // the embeddings, looked up
  const Batch batch{{"x", torch::randint(11, {2, 6})}, {"y", torch::randint(11, {2, 6})}};
  const torch::Tensor middle = module.forward_units(batch, 0, 2, {});
  EXPECT_EQ(middle.sizes(), torch::IntArrayRef({2, 6, 8}));  // after block 0
  const torch::Tensor logits = module.forward_units(batch, 2, 4, middle);
  const StepOutput staged = module.loss_of_units(batch, logits);
  EXPECT_TRUE(torch::equal(staged.loss, module.training_step(batch).loss));
}

TEST(ObjectiveStages, WhatTheLastStageAloneWouldHoldIsRefusedByKey) {
  auto lm = std::make_shared<models::TransformerLmImpl>(
      models::TransformerLmOptions(11).d_model(8).layers(2).heads(2).seq_len(6));
  ObjectiveModule metrics(
      lm, objective_section("losses: [{type: cross_entropy}]\nmetrics: [{type: accuracy}]"));
  ASSERT_TRUE(metrics.stage_refusal().has_value());
  EXPECT_TRUE(test::contains(*metrics.stage_refusal(), "objective.metrics"))
      << *metrics.stage_refusal();
  ObjectiveModule two(lm, objective_section("losses: [{type: cross_entropy}, {type: cross_entropy, "
                                            "name: again}]"));
  ASSERT_TRUE(two.stage_refusal().has_value());
  EXPECT_TRUE(test::contains(*two.stage_refusal(), "objective.losses has 2 terms"));
}

}  // namespace
}  // namespace unitrain
