// StepRunner's step of a pipeline stage (distributed.pipeline_parallel): each micro-batch's
// forward through the stage, the backwards 1F1B has due, the decisions at the window's end.
#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>

#include "unitrain/core/run_position.h"
#include "unitrain/engine/step/module_error.h"
#include "unitrain/engine/step/pipeline_step.h"
#include "unitrain/engine/step/step_runner.h"

namespace unitrain {

MicroStep StepRunner::staged_forward_backward(const Batch& batch, double weight, bool window_end,
                                              StepDecision mine, int64_t step) {
  MicroStep m;
  m.window_end = window_end;
  {
    Profiler::Range forward(profiler_, Phase::Forward);
    StepOutput out;
    try {
      AutocastScope autocast = precision_.autocast();
      out = pipeline_->forward(batch, weight);
    } catch (...) {
      rethrow_module_error(fmt::format("the module's forward_units (pipeline stage {}) at step {}",
                                       pipeline_->stage().stage(), step));
    }
    if (out.loss.defined()) {  // the last stage: the run's loss
      m.loss = out.loss.detach();
      if (!std::isfinite(m.loss_value())) watch_.window_saw_bad();
    }
  }
  // Every backward runs, a bad window's too: the stages wait for one another's gradients; the
  // decision shared at the window's end skips the update everywhere.
  while (pipeline_->backward_due(window_end)) {
    const bool ends_window = window_end && pipeline_->waiting() == 1;
    Profiler::Range range(profiler_, Phase::Backward);
    if (position_) position_->enter("backward");
    hooks_.call("on_before_backward", &Callback::on_before_backward, pipeline_->oldest());
    sync_.before_backward(ends_window);
    try {
      pipeline_->backward([this](const torch::Tensor& loss, double w) {
        return precision_.scale_loss(w == 1.0 ? loss : loss * w);
      });
    } catch (...) {
      rethrow_module_error(fmt::format("a backward of pipeline stage {} at step {}",
                                       pipeline_->stage().stage(), step));
    }
    hooks_.call("on_after_backward", &Callback::on_after_backward);
    sync_.after_backward();
  }
  if (window_end) {
    pipeline_->end_window();
    mine.nonfinite = watch_.window_seen_bad();
    sync_.share(mine, torch::Tensor());
  }
  return m;
}

}  // namespace unitrain
