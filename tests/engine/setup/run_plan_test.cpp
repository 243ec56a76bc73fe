#include "unitrain/engine/setup/run_plan.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "unitrain/data/loader.h"
#include "unitrain/data/tensor_dataset.h"

namespace unitrain {
namespace {

Loader plan_loader(int64_t n, int64_t batch, bool drop_last) {
  auto data = std::make_shared<TensorDataset>(Batch{{"x", torch::zeros({n, 2})}});
  return Loader(data, LoaderOptions().batch_size(batch).drop_last(drop_last).workers(0), 0);
}

TEST(RunPlan, WindowsStepsAndTheShortLastWindow) {
  TrainOptions o;
  o.accumulation_steps = 3;
  o.max_length = TrainUnit::epochs(2);
  // 10 samples in batches of 3: batches 3,3,3,1; windows {0,1,2} and {3}.
  RunPlan p = RunPlan::make(o, plan_loader(10, 3, false), 0, 1);
  EXPECT_EQ(p.batches_per_epoch, 4);
  EXPECT_EQ(p.steps_per_epoch, 2);
  EXPECT_EQ(p.total_steps, 4);
  EXPECT_EQ(p.samples_per_step, 9);
  EXPECT_FALSE(p.ends_window(0));
  EXPECT_TRUE(p.ends_window(2));
  EXPECT_TRUE(p.ends_window(3));  // the epoch's last batch ends its window
  EXPECT_EQ(p.window_samples(1), 9);
  EXPECT_EQ(p.window_samples(3), 1);
}

TEST(RunPlan, LengthInSamplesRoundsStepsUpAndSchedulesCountEpochs) {
  TrainOptions o;
  o.max_length = TrainUnit::samples(100);
  RunPlan p = RunPlan::make(o, plan_loader(64, 8, true), 0, 2);
  EXPECT_EQ(p.samples_per_step, 16);
  EXPECT_EQ(p.total_steps, 7);  // ceil(100 / 16)
  ScheduleContext per_step = p.schedule_context(false, 0.1);
  EXPECT_EQ(per_step.total_steps, 7);
  EXPECT_DOUBLE_EQ(per_step.base_lr, 0.1);
  ScheduleContext per_epoch = p.schedule_context(true, 0.1);
  EXPECT_EQ(per_epoch.total_steps, 1);  // 8 steps per epoch
}

}  // namespace
}  // namespace unitrain
