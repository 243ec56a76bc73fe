// PipelineStep with threads as stages: a window's micro-batches through 1F1B give each stage the
// gradients one process computes for its units (the same sums in the same order: bitwise), each
// stage holds no more micro-batches than 1F1B allows, and evaluation gives every stage the loss.
#include "unitrain/engine/step/pipeline_step.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

#include "parallel/run_ranks.h"
#include "unitrain/parallel/pipeline_stage.h"

namespace unitrain {
namespace {

/// Three units of Linear(4, 4) + tanh; the loss is the mean square of the last one's output
/// against the batch's y.
class Chain : public TrainModule {
 public:
  Chain() {
    torch::manual_seed(7);
    for (int i = 0; i < 3; ++i) {
      layers.push_back(register_module("l" + std::to_string(i), torch::nn::Linear(4, 4)));
    }
  }
  StepOutput training_step(const Batch& batch) override {
    return loss_of_units(batch, forward_units(batch, 0, 3, {}));
  }
  StepOutput validation_step(const Batch& batch) override { return training_step(batch); }
  std::vector<std::vector<torch::Tensor>> units() override {
    std::vector<std::vector<torch::Tensor>> out;
    for (auto& l : layers) out.push_back(l->parameters());
    return out;
  }
  torch::Tensor forward_units(const Batch& batch, size_t first, size_t end,
                              const torch::Tensor& x) override {
    torch::Tensor h = first == 0 ? batch.at("x") : x;
    for (size_t i = first; i < end; ++i) h = torch::tanh(layers[i]->forward(h));
    return h;
  }
  StepOutput loss_of_units(const Batch& batch, const torch::Tensor& out) override {
    return {(out - batch.at("y")).square().mean(), {}};
  }
  std::optional<std::string> stage_refusal() override { return std::nullopt; }
  std::vector<torch::nn::Linear> layers;
};

std::vector<Batch> window(int micro) {
  torch::manual_seed(11);
  std::vector<Batch> out;
  for (int i = 0; i < micro; ++i) {
    Batch b;
    b.set("x", torch::randn({2, 4}));
    b.set("y", torch::randn({2, 4}));
    out.push_back(b);
  }
  return out;
}

TEST(PipelineStep, OneFOneBGivesEachStageTheGradientsOfOneProcess) {
  const int micro = 5;
  const std::vector<Batch> batches = window(micro);
  Chain whole;
  for (const Batch& b : batches) (whole.training_step(b).loss * (1.0 / micro)).backward();
  // Built here: the threads share the global generator the weights are drawn from.
  std::vector<std::shared_ptr<Chain>> modules;
  for (int r = 0; r < 3; ++r) modules.push_back(std::make_shared<Chain>());
  test::run_shared_ranks(3, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    Chain& module = *modules[size_t(rank)];
    auto stage = std::make_shared<PipelineStage>(group, std::vector<size_t>{0, 1, 2}, 3);
    PipelineStep step(module, stage, torch::kCPU);
    size_t most = 0;
    for (int i = 0; i < micro; ++i) {
      const bool end = i == micro - 1;
      const StepOutput out = step.forward(batches[size_t(i)], 1.0 / micro);
      EXPECT_EQ(out.loss.defined(), stage->last());
      most = std::max(most, step.waiting());
      while (step.backward_due(end)) {
        step.backward([](const torch::Tensor& loss, double w) { return loss * w; });
      }
    }
    step.end_window();
    // 1F1B: stage s of P holds at most P - s forwards.
    EXPECT_EQ(most, size_t(3 - stage->stage()));
    EXPECT_EQ(step.waiting(), 0u);
    const size_t mine = stage->first_unit();
    for (size_t k = 0; k < 2; ++k) {
      const torch::Tensor& got = module.layers[mine]->parameters()[k].grad();
      const torch::Tensor& want = whole.layers[mine]->parameters()[k].grad();
      ASSERT_TRUE(got.defined());
      EXPECT_TRUE(torch::equal(got, want)) << "unit " << mine;
    }
    for (size_t u = 0; u < 3; ++u) {  // the other stages' units took no gradient here
      if (u != mine) EXPECT_FALSE(module.layers[u]->weight.grad().defined());
    }
  });
}

TEST(PipelineStep, EvaluationGivesEveryStageTheLastStagesLoss) {
  const Batch batch = window(1)[0];
  Chain whole;
  const double want = whole.validation_step(batch).loss.item<double>();
  std::vector<std::shared_ptr<Chain>> modules{std::make_shared<Chain>(), std::make_shared<Chain>()};
  test::run_shared_ranks(2, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    Chain& module = *modules[size_t(rank)];
    torch::NoGradGuard no_grad;
    PipelineStep step(module, std::make_shared<PipelineStage>(group, std::vector<size_t>{0, 2}, 3),
                      torch::kCPU);
    EXPECT_NEAR(step.evaluate(batch).loss.item<double>(), want, 1e-7);
  });
}

}  // namespace
}  // namespace unitrain
