#pragma once
// Evaluator: one pass of validation_step (or test_step) over a dataset, without gradients.
#include <map>
#include <string>

#include "unitrain/core/train_module.h"
#include "unitrain/data/loader.h"
#include "unitrain/metrics/metric_accumulator.h"

namespace unitrain {

class PipelineStep;

class CallbackList;
class Precision;
class ShardOrderedMetrics;

enum class EvalSplit { Val, Test };

/// Runs the module in eval mode under NoGradGuard over every batch of `loader` (epoch 0, in
/// order) and returns the loss and metrics averaged over samples (not batches), keyed
/// `<prefix>/loss`, `<prefix>/<metric>`. Restores the module's training mode after.
/// `max_batches` >= 0 stops after that many batches (test_mode). With `precision`, the steps
/// run as training's forward does (autocast; bf16-true's bfloat16 inputs).
std::map<std::string, double> evaluate(TrainModule& module, const Loader& loader, EvalSplit split,
                                       const std::string& prefix, int64_t max_batches = -1,
                                       const Precision* precision = nullptr,
                                       const std::string& token_key = "");

/// How evaluate_sums runs its pass.
struct EvalPass {
  int64_t max_batches = -1;              ///< >= 0: stop after that many batches (test_mode)
  CallbackList* hooks = nullptr;         ///< on_validation_batch_start/end (on_test_...) per batch
  const Precision* precision = nullptr;  ///< the steps run as training's forward does
  /// >= 0: the module's forward is a collective (ZeRO 3 gathers each unit's parameters from
  /// every rank), so every rank must run as many: a rank whose shard ends sooner runs its last
  /// batch again until it has run that many, the results thrown away (no hooks, no metrics).
  int64_t lockstep_batches = -1;
  /// Non-empty (train.loss_average: tokens): each batch's loss and metrics weigh by its target
  /// tokens (entries of that key other than -100), not its samples, as the training loss does:
  /// a validation loss is then the mean over every target token.
  std::string token_key;
  /// distributed.reproducible: each batch's values go there instead, for the caller to add up
  /// in the global order of the batches (ShardOrderedMetrics::fold).
  ShardOrderedMetrics* in_order = nullptr;
  /// distributed.pipeline_parallel: each batch's forward runs through the stages (every one
  /// gets the last's loss) instead of validation_step.
  PipelineStep* pipeline = nullptr;
};

/// The same pass, returning the raw sums (for reducing across processes before dividing), as
/// `pass` says.
MetricAccumulator evaluate_sums(TrainModule& module, const Loader& loader, EvalSplit split,
                                const EvalPass& pass = {});

}  // namespace unitrain
