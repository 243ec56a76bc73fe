// LrController on its own: the lr of each step (or epoch) from the schedule, scaled after
// rollbacks, a constant lr left alone.
#include "unitrain/engine/step/lr_controller.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "unitrain/engine/builtins.h"
#include "unitrain/optim/optimizer.h"

namespace unitrain {
namespace {

torch::Tensor weight_of_lr_test() { return torch::zeros({2}, torch::requires_grad()); }

TEST(LrController, SetsEachStepsLrFromTheScheduleTimesItsScale) {
  register_builtins();
  torch::optim::SGD sgd(std::vector<torch::Tensor>{weight_of_lr_test()}, 0.1);
  ScheduleContext context;
  context.total_steps = 10;
  LrController lr(sgd, build_scheduler(Config::from_string("{type: linear}"), context), false);
  TrainState state;
  lr.follow(state);
  EXPECT_DOUBLE_EQ(get_lr(sgd), 0.1);  // step 0: the base lr
  state.step = 5;
  lr.follow(state);
  EXPECT_NEAR(get_lr(sgd), 0.05, 1e-12);  // halfway down to 0
  lr.set_scale(0.5);                      // after a rollback
  lr.follow(state);
  EXPECT_NEAR(get_lr(sgd), 0.025, 1e-12);
  EXPECT_FALSE(lr.per_epoch());
}

TEST(LrController, APerEpochScheduleFollowsEpochsAndAConstantLrIsLeftAlone) {
  register_builtins();
  torch::optim::SGD sgd(std::vector<torch::Tensor>{weight_of_lr_test()}, 0.2);
  ScheduleContext context;
  context.total_steps = 4;  // epochs, for a per-epoch schedule
  LrController lr(sgd, build_scheduler(Config::from_string("{type: linear}"), context), true);
  TrainState state;
  state.step = 3;  // steps do not move it
  lr.follow(state);
  EXPECT_DOUBLE_EQ(get_lr(sgd), 0.2);
  state.epoch = 2;
  lr.follow(state);
  EXPECT_NEAR(get_lr(sgd), 0.1, 1e-12);

  torch::optim::SGD constant(std::vector<torch::Tensor>{weight_of_lr_test()}, 0.3);
  LrController none(constant, nullptr, false);
  set_lr(constant, 0, 0.7);  // e.g. the module's own change
  none.follow(state);
  EXPECT_DOUBLE_EQ(get_lr(constant), 0.7);
  EXPECT_EQ(none.scheduler(), nullptr);
}

}  // namespace
}  // namespace unitrain
