#pragma once
// TrainModule: what the Trainer trains. Subclass it (library path) or let the YAML build an
// ObjectiveModule (config path); both run on the same engine.
#include <torch/nn/module.h>

#include <map>
#include <optional>
#include <string>

#include "unitrain/core/batch.h"
#include "unitrain/core/metric_value.h"

namespace unitrain {

/// The result of one step on one batch.
struct StepOutput {
  torch::Tensor loss;                           ///< scalar, mean over the batch
  std::map<std::string, MetricValue> metrics;   ///< logged as train/<name>, val/<name>
};

/// A model plus how to compute its loss and metrics on a batch. Register submodules and
/// parameters as in any torch::nn::Module; the Trainer optimises parameters().
class TrainModule : public torch::nn::Module {
 public:
  virtual StepOutput training_step(const Batch& batch) = 0;
  virtual StepOutput validation_step(const Batch& batch) = 0;
  virtual StepOutput test_step(const Batch& batch) { return validation_step(batch); }
  /// The module whose parameters and buffers a checkpoint's model.pt and `unitrain export`
  /// hold and `model.init_from` loads, by its state_dict() names. Default: this module.
  virtual torch::nn::Module& weights() { return *this; }
  /// Which way the metric this module logs as `name` (without its split: "acc" for val/acc)
  /// improves; nullopt when it does not say. `checkpoint.best.mode: auto` and
  /// `early_stopping.mode: auto` follow it. Default: "loss" is lower-is-better, nothing else
  /// is declared; override it to declare your own metrics'.
  virtual std::optional<MetricDirection> metric_direction(const std::string& name) const {
    if (name == "loss") return MetricDirection::LowerIsBetter;
    return std::nullopt;
  }
};

}  // namespace unitrain
