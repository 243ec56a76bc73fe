#pragma once
// ObjectiveModule: the TrainModule the YAML path builds from `model` and `objective`.
#include <memory>
#include <string>
#include <vector>

#include "unitrain/core/config.h"
#include "unitrain/core/train_module.h"
#include "unitrain/models/model.h"
#include "unitrain/objective/loss.h"

namespace unitrain {

/// Runs the model on the batch tensors named in `objective.inputs`, names its outputs by
/// `objective.predictions`, and computes the weighted sum of the losses (each tying a
/// prediction to a batch target) plus the weighted regularizers:
///   loss = sum_i weight_i * loss_i + sum_j weight_j * regularizer_j.
/// When there is more than one term (several losses, or any regularizer) each unweighted term
/// is reported as a metric `loss_<name>` (losses) or `reg_<name>` (regularizers); configured
/// metrics are reported under their names. The model is the submodule "model", so parameter
/// names are `model.<name>`.
/// Throws ConfigError at construction for a loss, metric or regularizer naming an unknown
/// prediction, no loss, or duplicate names; and during a step for a batch missing an input or
/// target (listing the batch keys), a model returning the wrong number of predictions, or a
/// prediction whose shape cannot fit its target (naming the loss, both tensors and both shapes).
class ObjectiveModule : public TrainModule {
 public:
  /// `model_section` is the resolved `model`, `objective_section` the resolved `objective`.
  ObjectiveModule(const Config& model_section, const Config& objective_section);
  /// A model built in C++ trained with a config-driven objective (library path, tests).
  ObjectiveModule(ModelPtr model, const Config& objective_section);

  StepOutput training_step(const Batch& batch) override;
  StepOutput validation_step(const Batch& batch) override;

  const ModelPtr& model() const { return model_; }
  /// The model alone: checkpoints and exports name its tensors as the model does
  /// (`layers.0.weight`), as a Python module of the same structure would.
  torch::nn::Module& weights() override { return *model_; }
  const std::vector<std::string>& inputs() const { return inputs_; }
  const std::vector<std::string>& predictions() const { return predictions_; }

 private:
  struct LossTerm;
  struct RegularizerTerm;
  struct MetricTerm;
  void configure(const Config& objective_section);
  StepOutput run(const Batch& batch);
  std::vector<torch::Tensor> gather_predictions(const Batch& batch);
  ModelPtr model_;
  std::string model_type_ = "model";
  std::vector<std::string> inputs_;
  std::vector<std::string> predictions_;
  std::vector<size_t> output_order_;  ///< named model outputs: the index of each prediction
  std::vector<std::shared_ptr<LossTerm>> losses_;
  std::vector<std::shared_ptr<RegularizerTerm>> regularizers_;
  std::vector<std::shared_ptr<MetricTerm>> metrics_;
};

/// The schema of the `objective` section.
std::shared_ptr<const Schema> objective_section_schema();

}  // namespace unitrain
