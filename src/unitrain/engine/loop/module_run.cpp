#include "unitrain/engine/loop/module_run.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "unitrain/core/error.h"
#include "unitrain/engine/loop/loop_optimizers.h"
#include "unitrain/engine/step/module_error.h"
#include "unitrain/log/console.h"
#include "unitrain/parallel/gradient_sync.h"

namespace unitrain {

LoopModuleRun::LoopModuleRun(const TrainState& counters, int rank, int world, torch::Device device,
                             std::function<void(const std::string&, torch::Tensor)> log,
                             GradientSync& sync, const LoopOptimizers& optimizers,
                             std::vector<torch::Tensor> params)
    : counters_(counters),
      rank_(rank),
      world_(world),
      device_(device),
      log_(std::move(log)),
      sync_(sync),
      optimizers_(optimizers),
      params_(std::move(params)) {}

void LoopModuleRun::log(const std::string& name, double value) {
  log_(name, torch::scalar_tensor(value, torch::kFloat64));
}

void LoopModuleRun::log(const std::string& name, const torch::Tensor& value) {
  UT_CHECK(value.defined() && value.numel() == 1, "run().log('", name,
           "') takes a scalar tensor, got ",
           value.defined() ? fmt::format("{} values", value.numel()) : std::string("no tensor"));
  log_(name, value.detach());
}

void LoopModuleRun::backward(const torch::Tensor& loss) {
  UT_CHECK(optimizers_.manual(),
           "run().backward() is for a module that steps its own optimizers (configure_optimizers "
           "adds them); otherwise return the loss from training_step and the Trainer runs "
           "backward");
  UT_CHECK(loss.defined() && loss.numel() == 1, "run().backward() needs a scalar loss");
  // Each rank's gradients are summed by the reduce (DataParallelOptions::average is off):
  // 1 / ranks of each loss makes the sum their average.
  // Once, as for a returned loss (StepRunner): a layer never registered gets gradients that no
  // optimizer built from the module's parameters steps and no checkpoint saves.
  if (!leaves_checked_) {
    leaves_checked_ = true;
    const std::string warning = stray_leaves_warning(leaves_outside(loss, params_));
    if (!warning.empty()) log::warn(warning);
  }
  sync_.before_backward(true);
  try {
    (world_ > 1 ? loss / static_cast<double>(world_) : loss).backward();
  } catch (...) {
    rethrow_module_error(fmt::format("run().backward() at step {}", counters_.step + 1));
  }
  sync_.finish(params_);
}

torch::optim::Optimizer& LoopModuleRun::optimizer(const std::string& name) {
  return optimizers_.named(name);
}

}  // namespace unitrain
