// The evaluator on its own: a pass of validation_step over a loader, averaged over samples (or
// target tokens), without gradients, the module's training mode kept.
#include "unitrain/engine/loop/evaluator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/regression_fixture.h"

namespace unitrain {
namespace {

TEST(Evaluator, AveragesOverSamplesWithoutGradientsAndKeepsTheTrainingMode) {
  test::Regression module;
  module.train();
  DatasetPtr data = test::regression_data(20);
  // Batches of 8, 8 and 4: a mean of batch means would weigh the last batch double.
  const Loader loader(data, LoaderOptions().batch_size(8).workers(0).shuffle(false), 0, "data.val");
  const std::map<std::string, double> m = evaluate(module, loader, EvalSplit::Val, "val");
  const Batch all =
      data->get_batch({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19});
  torch::NoGradGuard no_grad;
  const double whole =
      torch::mse_loss(module.fc->forward(all.at("x")).squeeze(1), all.at("y")).item<double>();
  EXPECT_NEAR(m.at("val/loss"), whole, whole * 1e-6);  // float32 sums
  EXPECT_TRUE(module.is_training());
  EXPECT_FALSE(module.fc->weight.grad().defined());
  // test_mode's one batch.
  const std::map<std::string, double> first = evaluate(module, loader, EvalSplit::Val, "val", 1);
  const Batch b0 = data->get_batch({0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_NEAR(first.at("val/loss"),
              torch::mse_loss(module.fc->forward(b0.at("x")).squeeze(1), b0.at("y")).item<double>(),
              1e-6 * first.at("val/loss"));
}

/// A language model's validation in small: the loss is the mean over a batch's target tokens
/// (y other than -100) of their values.
struct TokenMean : TrainModule {
  StepOutput training_step(const Batch& b) override { return validation_step(b); }
  StepOutput validation_step(const Batch& b) override {
    const torch::Tensor y = b.at("y"), kept = y.ne(-100);
    return {y.masked_select(kept).to(torch::kFloat).mean(), {}};
  }
};

TEST(Evaluator, WithATokenKeyAveragesOverTargetTokensNotSamples) {
  // Two batches of 2 samples: 6 tokens of 1 in the first, 1 token of 8 in the second.
  const torch::Tensor y =
      torch::tensor({1, 1, 1, 1, 1, 1, 8, -100, -100, -100, -100, -100}, torch::kLong).view({4, 3});
  DatasetPtr data = std::make_shared<TensorDataset>(Batch{{"y", y}});
  const Loader loader(data, LoaderOptions().batch_size(2).workers(0).shuffle(false), 0, "data.val");
  TokenMean module;
  EXPECT_DOUBLE_EQ(evaluate(module, loader, EvalSplit::Val, "val").at("val/loss"), 4.5);
  EXPECT_DOUBLE_EQ(evaluate(module, loader, EvalSplit::Val, "val", -1, nullptr, "y").at("val/loss"),
                   2.0);  // (6 * 1 + 1 * 8) / 7
}

}  // namespace
}  // namespace unitrain
