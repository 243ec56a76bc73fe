#pragma once
// PipelineStep: one stage's share of each step under distributed.pipeline_parallel — the
// micro-batches of a window through 1F1B (one forward, one backward), their activations and
// gradients passed between the stages, and the evaluation's forward through every stage.
#include <torch/types.h>

#include <deque>
#include <functional>
#include <memory>

#include "unitrain/core/batch.h"
#include "unitrain/core/train_module.h"
#include "unitrain/parallel/pipeline_stage.h"

namespace unitrain {

/// 1F1B, Megatron's schedule, kept by the calls the step makes for each micro-batch: stage s of
/// P runs up to P - s - 1 forwards ahead of its backwards (warm-up), then one backward after
/// each forward, and the rest at the window's end (cool-down). The last stage runs a
/// micro-batch's backward right after its forward; its loss is the run's. Each stage holds at
/// most P - s micro-batches' activations, whatever the window's length. A window of M
/// micro-batches leaves every stage idle for (P - 1) / (M + P - 1) of the step (the bubble).
class PipelineStep {
 public:
  /// `carry_draws` (distributed.reproducible): each stage's forward draws on from the random
  /// generators' state the previous stage's forward of the micro-batch left (sent with its
  /// activation), as one process's forward of the whole model would.
  PipelineStep(TrainModule& module, std::shared_ptr<PipelineStage> stage, torch::Device device,
               bool carry_draws = false);

  const PipelineStage& stage() const { return *stage_; }
  /// The forward of the window's next micro-batch on this stage: the previous stage's output
  /// received (the first stage: the batch), this stage's units run, their output sent on. On
  /// the last stage the loss of loss_of_units (scaled by `weight` in its backward); elsewhere
  /// an undefined one.
  StepOutput forward(const Batch& batch, double weight);
  /// Whether the oldest forward's backward is due now (1F1B; at the window's end, each one).
  bool backward_due(bool window_end) const;
  /// Forwards waiting for their backward.
  size_t waiting() const { return waiting_.size(); }
  /// What the oldest waiting forward's backward starts from: the last stage's loss, another's
  /// output.
  const torch::Tensor& oldest() const;
  /// The oldest waiting forward's backward: the last stage's loss through `scale` (its weight in
  /// the window and the precision's loss scale), another's output with the gradient the next
  /// stage sends; the gradient of its input then sent to the previous stage.
  void backward(
      const std::function<torch::Tensor(const torch::Tensor& loss, double weight)>& scale);
  /// The window's end: every send done.
  void end_window();
  /// The forward of `batch` through every stage, no gradient: the loss (from the last stage) on
  /// every stage.
  StepOutput evaluate(const Batch& batch);
  /// Seconds in training's forwards and backwards on this stage so far, its waits for the other
  /// stages included (PipelineStage::waited_seconds of them: the bubble, and the imbalance).
  double busy_seconds() const { return seconds_; }
  /// The stage's wait for the other stages in training so far.
  double waited_seconds() const { return waited_; }

 private:
  struct InFlight {
    torch::Tensor input;   ///< received (requires grad): undefined on the first stage
    torch::Tensor output;  ///< the loss on the last stage
    double weight = 1;
    int micro = 0;
  };
  TrainModule& module_;
  std::shared_ptr<PipelineStage> stage_;
  torch::Device device_;
  bool carry_draws_;
  std::deque<InFlight> waiting_;
  int forwards_ = 0;  ///< forwards in the open window
  double seconds_ = 0, waited_ = 0;
  /// Adds the time from its making to its end to seconds_ (and the stage's waits to waited_).
  class Timed;
};

}  // namespace unitrain
