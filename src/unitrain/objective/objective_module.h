#pragma once
// ObjectiveModule: the TrainModule the YAML path builds from `model` and `objective`.
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "unitrain/core/config.h"
#include "unitrain/core/train_module.h"
#include "unitrain/models/model.h"
#include "unitrain/objective/loss.h"
#include "unitrain/objective/model_outputs.h"
#include "unitrain/objective/teacher.h"

namespace unitrain {

class Teacher;

/// Keys every term of objective.losses and objective.metrics has beside its `type` and `args`.
struct ObjectiveTerm {
  std::optional<std::string> prediction;  ///< unset = the first prediction
  std::string target = "y";
  std::optional<std::string> name;  ///< unset = the type
  std::string type;  ///< the component's (the registered loss, metric or regularizer)
  Config section;    ///< the resolved entry, which its registry builds the term from

  std::string name_or_type() const { return name ? *name : type; }
};

/// An entry of objective.losses, declared in declare().
struct LossOptions : ObjectiveTerm {
  double weight = 1.0;
  static void declare(Options<LossOptions>& o);
};

/// An entry of objective.regularizers, declared in declare().
struct RegularizerOptions : ObjectiveTerm {
  double weight = 0;  ///< required
  bool include_bias = false;
  RegularizerOptions() { target = "params"; }
  static void declare(Options<RegularizerOptions>& o);
};

/// An entry of objective.metrics, declared in declare().
struct MetricOptions : ObjectiveTerm {
  static void declare(Options<MetricOptions>& o);
};

/// The `objective` section, each key declared once in declare().
struct ObjectiveOptions {
  std::vector<std::string> inputs{"x"};
  std::vector<std::string> predictions{"logits"};
  std::vector<LossOptions> losses;
  std::vector<RegularizerOptions> regularizers;
  std::vector<MetricOptions> metrics;
  std::optional<TeacherOptions> teacher;  ///< null = none

  static void declare(Options<ObjectiveOptions>& o);
};

/// Runs the model on the batch tensors named in `objective.inputs`, names its outputs by
/// `objective.predictions`, and computes the weighted sum of the losses (each tying a
/// prediction to a batch target) plus the weighted regularizers:
///   loss = sum_i weight_i * loss_i + sum_j weight_j * regularizer_j.
/// When there is more than one term (several losses, or any regularizer) each unweighted term
/// is reported as a metric `loss_<name>` (losses) or `reg_<name>` (regularizers); configured
/// metrics are reported under their names. The model is the submodule "model", so parameter
/// names are `model.<name>`. With `objective.teacher` (or set_teacher()), a frozen Teacher runs
/// on the batch first, on the student's device, and its outputs join the batch under its
/// prediction names: losses and metrics take them as targets.
/// Throws ConfigError at construction for a loss, metric or regularizer naming an unknown
/// prediction, no loss, duplicate names, or a teacher (see Teacher) whose weights are missing or
/// do not fit or whose prediction names clash with the student's; and during a step for a batch
/// missing an input or target (listing the batch keys) or holding a tensor named as a teacher
/// prediction, a model returning the wrong number of predictions, or a prediction whose shape
/// cannot fit its target (naming the loss, both tensors and both shapes).
class ObjectiveModule : public TrainModule {
 public:
  /// `model_section` is the resolved `model`, `objective_section` the `objective` section.
  ObjectiveModule(const Config& model_section, const Config& objective_section);
  /// A model built in C++ trained with a config-driven objective (library path, tests).
  ObjectiveModule(ModelPtr model, const Config& objective_section);

  StepOutput training_step(const Batch& batch) override;
  StepOutput validation_step(const Batch& batch) override;

  const ModelPtr& model() const { return model_; }
  /// The registered model's name (`model.type`), or "model" for one built in C++.
  const std::string& model_type() const { return model_type_; }
  /// The model alone: checkpoints and exports name its tensors as the model does
  /// (`layers.0.weight`), as a Python module of the same structure would.
  torch::nn::Module& weights() override { return *model_; }
  Model* trained_model() override { return model_.get(); }
  /// True when the model carries LoRA adapters (model.lora): checkpoints hold them alone.
  bool checkpoints_trainable_only() override { return !models::lora_layers(*model_).empty(); }
  /// The model's (Model::units()).
  std::vector<std::vector<torch::Tensor>> units() override { return model_->units(); }
  void set_unit_runner(std::shared_ptr<UnitRunner> runner) override {
    model_->set_unit_runner(std::move(runner));
  }
  /// The model's units [first, end) on the batch's inputs (Model::forward_units).
  torch::Tensor forward_units(const Batch& batch, size_t first, size_t end,
                              const torch::Tensor& x) override;
  /// The losses on `out`, the one prediction.
  StepOutput loss_of_units(const Batch& batch, const torch::Tensor& out) override;
  /// Refused by key: a model that runs whole, a teacher, several predictions, losses, metrics or
  /// regularizers (their values would live on the last stage only).
  std::optional<std::string> stage_refusal() override;
  /// The model's (Model::borrowed_parameters).
  std::vector<std::pair<size_t, torch::Tensor>> borrowed_parameters() override {
    return model_->borrowed_parameters();
  }
  /// The model's (Model::unit_costs).
  std::vector<double> unit_costs() override { return model_->unit_costs(); }
  /// `loss`, each `loss_<term>` and `reg_<term>` are lower-is-better; a configured metric
  /// improves the way its type declares (metric_registry()); other names: nullopt.
  std::optional<MetricDirection> metric_direction(const std::string& name) const override;
  const std::vector<std::string>& inputs() const { return outputs_->inputs(); }
  const std::vector<std::string>& predictions() const { return outputs_->predictions(); }

  /// The frozen model whose outputs join each batch before the losses (objective.teacher), or
  /// null. It is not a submodule: parameters() and weights() do not hold it.
  const std::shared_ptr<Teacher>& teacher() const { return teacher_; }
  /// Sets (or, with null, removes) the teacher: the library's way to objective.teacher.
  /// ConfigError when one of its prediction names is also a student prediction.
  void set_teacher(std::shared_ptr<Teacher> teacher);

 private:
  struct LossTerm;
  struct RegularizerTerm;
  struct MetricTerm;
  void configure(const Config& objective_section);
  /// A model whose logits are cut over a tensor group (Model::vocab_split): its losses become
  /// the vocabulary-parallel ones; metrics and regularizers, which would need the whole logits
  /// or parameters, are refused by key.
  void take_vocab_split();
  void add_losses(const ObjectiveOptions& o, std::set<std::string>& logged);
  void add_regularizers(const ObjectiveOptions& o, std::set<std::string>& logged);
  void add_metrics(const ObjectiveOptions& o, std::set<std::string>& logged);
  void check_teacher_names(const std::vector<std::string>& teacher_predictions) const;
  torch::Device student_device(const Batch& batch);
  StepOutput run(const Batch& input);
  /// The losses, regularizers and metrics of `batch` on the model's predictions `preds`.
  StepOutput losses_of(const Batch& batch, const std::vector<torch::Tensor>& preds);
  ModelPtr model_;
  std::string model_type_ = "model";
  std::unique_ptr<ModelOutputs> outputs_;  ///< the student's inputs and predictions
  std::shared_ptr<Teacher> teacher_;
  torch::Tensor device_probe_;  ///< a parameter of the student: where it is
  std::vector<std::shared_ptr<LossTerm>> losses_;
  std::vector<std::shared_ptr<RegularizerTerm>> regularizers_;
  std::vector<std::shared_ptr<MetricTerm>> metrics_;
};

/// The schema of the `objective` section.
std::shared_ptr<const Schema> objective_section_schema();

}  // namespace unitrain
