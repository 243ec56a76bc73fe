#include "unitrain/commands/class_results.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "unitrain/data/loader.h"
#include "unitrain/data/tensor_dataset.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {
namespace {

/// x [B, 1] -> scores [B, 3] whose highest is class round(x) (clamped to 0..2).
struct PicksRoundedX : Model {
  torch::nn::Linear unused{nullptr};
  PicksRoundedX() { unused = register_module("unused", torch::nn::Linear(1, 1)); }
  std::vector<torch::Tensor> forward_all(const std::vector<torch::Tensor>& in) override {
    const torch::Tensor picked = in[0].squeeze(1).round().clamp(0, 2).to(torch::kInt64);
    return {torch::one_hot(picked, 3).to(torch::kFloat32)};
  }
};

Config classification_objective() {
  return Config(Config::from_string("losses: [{type: cross_entropy}]").node(), "objective");
}

// Five examples: true classes 0, 0, 1, 2, 2; predicted 0, 1, 1, 2, 0.
DatasetPtr five_examples(torch::Dtype y_type = torch::kInt64) {
  return std::make_shared<TensorDataset>(
      Batch{{"x", torch::tensor({0.0f, 1.0f, 1.2f, 2.0f, -1.0f}).unsqueeze(1)},
            {"y", torch::tensor({0, 0, 1, 2, 2}).to(y_type)}});
}

TEST(ClassResults, CountsEachTrueClassAndTheConfusionMatrixOverEveryBatch) {
  ObjectiveModule module(std::make_shared<PicksRoundedX>(), classification_objective());
  const Loader loader(five_examples(), LoaderOptions().batch_size(2).workers(0), 0);
  const auto r = class_results(module, loader, {"cat", "dog", "eel"});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->labels, (std::vector<std::string>{"cat", "dog", "eel"}));
  EXPECT_EQ(r->examples, (std::vector<int64_t>{2, 1, 2}));
  EXPECT_EQ(r->correct, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(r->confusion, (std::vector<std::vector<int64_t>>{{1, 1, 0}, {0, 1, 0}, {1, 0, 1}}));
  EXPECT_EQ(r->lines(),
            (std::vector<std::string>{"cat: 1 of 2 right (50.0%)", "dog: 1 of 1 right (100.0%)",
                                      "eel: 1 of 2 right (50.0%)"}));
  const auto j = nlohmann::json::parse(r->json());
  EXPECT_EQ(j["per_class"]["eel"]["examples"], 2);
  EXPECT_DOUBLE_EQ(j["per_class"]["cat"]["accuracy"].get<double>(), 0.5);
  EXPECT_EQ(j["confusion"]["counts"][2][0], 1);
}

TEST(ClassResults, WithoutNamesOrWithOtherCountsTheClassesAreTheirIndices) {
  ObjectiveModule module(std::make_shared<PicksRoundedX>(), classification_objective());
  const Loader loader(five_examples(), LoaderOptions().batch_size(5).workers(0), 0);
  EXPECT_EQ(class_results(module, loader, {})->labels, (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(class_results(module, loader, {"cat", "dog"})->labels,
            (std::vector<std::string>{"0", "1", "2"}));
}

TEST(ClassResults, NothingForTargetsThatAreNotClassIndices) {
  ObjectiveModule module(std::make_shared<PicksRoundedX>(), classification_objective());
  const Loader loader(five_examples(torch::kFloat32), LoaderOptions().batch_size(5).workers(0), 0);
  EXPECT_FALSE(class_results(module, loader, {}).has_value());
}

}  // namespace
}  // namespace unitrain
