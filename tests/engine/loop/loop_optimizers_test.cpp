// LoopOptimizers on its own: the lrs it logs and follows, for the Trainer's optimizer and for a
// module's own, and the errors naming what a module asked for.
#include "unitrain/engine/loop/loop_optimizers.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/optim/optimizer_setup.h"

namespace unitrain {
namespace {

torch::Tensor weight_of_loop_test() { return torch::zeros({2}, torch::requires_grad()); }

}  // namespace

TEST(LoopOptimizers, TheTrainersOptimizerLogsTrainLrAndFollowsItsSchedule) {
  register_builtins();
  auto sgd =
      std::make_unique<torch::optim::SGD>(std::vector<torch::Tensor>{weight_of_loop_test()}, 0.1);
  torch::optim::Optimizer* held = sgd.get();
  ScheduleContext context;
  context.total_steps = 10;
  LoopOptimizers loop(std::move(sgd),
                      build_scheduler(Config::from_string("{type: linear}"), context), false);
  EXPECT_FALSE(loop.manual());
  EXPECT_EQ(loop.trainers(), held);  // the fit's one owner of the Trainer's optimizer
  TrainState state;
  loop.follow(state);
  loop.remember_lrs();
  state.step = 5;
  loop.step_ended(state);  // step 5 used the lr set for it; the next one is lower
  MetricMap m;
  loop.add_lrs(m);
  EXPECT_DOUBLE_EQ(m.at("train/lr"), 0.1);
  EXPECT_NEAR(get_lr(*held), 0.05, 1e-12);
  EXPECT_THROW(loop.named("anything"), ConfigError);  // no module optimizers to name
}

TEST(LoopOptimizers, AModulesOptimizersAreNamedAndLoggedEachByName) {
  auto setup = std::make_unique<OptimizerSetup>(ScheduleContext{});
  setup->add("a", std::make_unique<torch::optim::SGD>(
                      std::vector<torch::Tensor>{weight_of_loop_test()}, 0.1));
  setup->add("b", std::make_unique<torch::optim::SGD>(
                      std::vector<torch::Tensor>{weight_of_loop_test()}, 0.2));
  EXPECT_THROW(setup->add("a", std::make_unique<torch::optim::SGD>(
                                   std::vector<torch::Tensor>{weight_of_loop_test()}, 0.1)),
               ConfigError);  // names are unique
  EXPECT_THROW(setup->add("bad name", nullptr), ConfigError);
  LoopOptimizers loop(std::move(setup), false);
  EXPECT_TRUE(loop.manual());
  EXPECT_EQ(loop.trainers(), nullptr);  // the step runner steps none
  loop.remember_lrs();
  MetricMap m;
  loop.add_lrs(m);
  EXPECT_EQ(m, (MetricMap{{"train/lr-a", 0.1}, {"train/lr-b", 0.2}}));
  EXPECT_DOUBLE_EQ(get_lr(loop.named("b")), 0.2);
  const std::string message = test::config_error_of([&] { loop.named("c"); });
  EXPECT_TRUE(test::contains(message, "it added: a, b")) << message;
}

}  // namespace unitrain
