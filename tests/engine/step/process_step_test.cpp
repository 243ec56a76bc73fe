// ProcessStep on its own (no Trainer, no loop): what it builds for one process and for a group of
// two (the sync, ZeRO's sharding by stage, manual optimization's none), that a step of two ranks
// on halves of a batch updates as one process on the whole batch, and ZeRO 3's refusal.
#include "unitrain/engine/step/process_step.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/regression_fixture.h"
#include "parallel/run_ranks.h"
#include "test_util.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/parallel/data_parallel.h"
#include "unitrain/parallel/pipeline_stage.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/sharded_sync.h"

namespace unitrain {
namespace {

RunSettings settings_with(const std::string& extra) {
  return RunSettings::from_config(resolve_run_config(test::base_config(test::temp_dir(), extra)));
}

/// The regression module, its first weights seeded alike in every rank.
struct Rig {
  test::Regression module;
  Precision precision{PrecisionMode::Fp32, module};
  CallbackList callbacks;  // no Trainer: no callbacks
  Rig() {
    torch::NoGradGuard no_grad;
    for (auto& p : module.parameters()) p.fill_(0.25);
  }
  std::vector<float> weights() const {
    std::vector<float> out;
    for (const auto& p : module.parameters()) {
      auto flat = p.detach().flatten().contiguous();
      out.insert(out.end(), flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
    }
    return out;
  }
};

/// One window of one micro-batch: forward/backward of `batch` (its share `weight`), then sync,
/// clip and the update.
void one_step(ProcessStep& step, const Batch& batch, double weight) {
  MicroStep m = step.runner().forward_backward(batch, weight, true, StepDecision{}, 1);
  step.runner().sync_gradients(m, 1);
  step.runner().clip_gradients(m, 1);
  step.runner().update(m, 1);
}

Batch rows(const Batch& batch, int64_t from, int64_t n) {
  Batch out;
  for (const auto& [name, t] : batch) out.set(name, t.narrow(0, from, n));
  return out;
}

std::vector<float> one_process_step(const Batch& batch) {
  Rig rig;
  const RunSettings settings = settings_with("");
  torch::optim::SGD sgd(rig.module.parameters(), torch::optim::SGDOptions(0.05));
  ProcessStep step({settings, nullptr, rig.module, rig.precision, rig.callbacks}, &sgd);
  EXPECT_NE(dynamic_cast<NoGradientSync*>(&step.sync()), nullptr);
  EXPECT_FALSE(step.sharded());
  EXPECT_EQ(step.sharding(), nullptr);
  EXPECT_EQ(step.sharded_parameters(), nullptr);
  one_step(step, batch, 1.0);
  return rig.weights();
}

Batch eight_rows() {
  torch::manual_seed(3);
  auto x = torch::randn({8, 4});
  return Batch{{"x", x}, {"y", x.sum(1)}};
}

TEST(ProcessStep, OneProcessSyncsNothingAndShardsNothing) {
  const Batch batch = eight_rows();
  Rig before;
  const std::vector<float> after = one_process_step(batch);
  EXPECT_NE(after, before.weights());  // it stepped
}

TEST(ProcessStep, TwoRanksOnHalvesStepAsOneProcessOnTheWhole) {
  const Batch batch = eight_rows();
  const std::vector<float> whole = one_process_step(batch);
  for (int zero : {0, 1, 2}) {
    SCOPED_TRACE("distributed.zero " + std::to_string(zero));
    const RunSettings settings =
        settings_with("distributed: {zero: " + std::to_string(zero) + "}\n");
    test::run_shared_ranks(2, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
      Rig rig;
      torch::optim::SGD sgd(rig.module.parameters(), torch::optim::SGDOptions(0.05));
      ProcessStep step({settings, group, rig.module, rig.precision, rig.callbacks}, &sgd);
      EXPECT_NE(dynamic_cast<DataParallelSync*>(&step.sync()), nullptr);
      EXPECT_EQ(step.sharded(), zero > 0);
      EXPECT_EQ(step.sharding() != nullptr, zero > 0);
      EXPECT_EQ(step.sharded_parameters(), nullptr);
      one_step(step, rows(batch, rank * 4, 4), 0.5);  // half the rows, half the weight
      const std::vector<float> mine = rig.weights();
      ASSERT_EQ(mine.size(), whole.size());
      for (size_t i = 0; i < mine.size(); ++i) EXPECT_NEAR(mine[i], whole[i], 1e-6) << i;
    });
  }
}

TEST(ProcessStep, ManualOptimizationShardsNothing) {
  const RunSettings settings = settings_with("distributed: {zero: 1}\n");
  test::run_shared_ranks(2, [&](int, const std::shared_ptr<ProcessGroup>& group) {
    Rig rig;
    ProcessStep step({settings, group, rig.module, rig.precision, rig.callbacks}, nullptr);
    EXPECT_NE(dynamic_cast<DataParallelSync*>(&step.sync()), nullptr);
    EXPECT_FALSE(step.sharded());
  });
}

TEST(ProcessStep, ZeroThreeOfAModelWithoutUnitsIsRefused) {
  const RunSettings settings = settings_with("distributed: {zero: 3}\n");
  test::run_shared_ranks(2, [&](int, const std::shared_ptr<ProcessGroup>& group) {
    Rig rig;
    torch::optim::SGD sgd(rig.module.parameters(), torch::optim::SGDOptions(0.05));
    const std::string message = test::message_of([&] {
      ProcessStep step({settings, group, rig.module, rig.precision, rig.callbacks}, &sgd);
    });
    EXPECT_TRUE(test::contains(message, "use distributed.zero: 2 for this model")) << message;
  });
}

TEST(ProcessStep, APipelineStageWithManualOptimizationIsRefused) {
  const RunSettings settings = settings_with("");
  test::run_shared_ranks(2, [&](int, const std::shared_ptr<ProcessGroup>& group) {
    Rig rig;
    auto stage = std::make_shared<PipelineStage>(group, std::vector<size_t>{0, 1}, 2);
    const std::string message = test::message_of([&] {
      ProcessStep step({settings, nullptr, rig.module, rig.precision, rig.callbacks, nullptr,
                        torch::kCPU, nullptr, stage},
                       nullptr);
    });
    EXPECT_TRUE(test::contains(message,
                               "distributed.pipeline_parallel with a module that steps "
                               "its own optimizers"))
        << message;
  });
}

}  // namespace
}  // namespace unitrain
