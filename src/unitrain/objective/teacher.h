#pragma once
// Teacher: a frozen model whose outputs on each batch become targets of the student's losses
// (knowledge distillation, `objective.teacher`).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/batch.h"
#include "unitrain/core/config.h"
#include "unitrain/core/options.h"
#include "unitrain/models/model.h"
#include "unitrain/objective/model_outputs.h"

namespace unitrain {

/// The `objective.teacher` section, each key declared once in declare().
struct TeacherOptions {
  Config model;            ///< the resolved model section {type, args}
  std::string model_type;  ///< its type
  std::optional<std::string> weights;
  std::vector<std::string> inputs{"x"};
  std::vector<std::string> predictions{"teacher_logits"};
  std::string path = "objective.teacher";  ///< the section's key path, for messages

  static void declare(Options<TeacherOptions>& o);
  /// From a resolved `objective.teacher` section.
  static TeacherOptions from_config(const Config& section) {
    return options_of<TeacherOptions>().read_resolved(section);
  }
};

/// A model that is run, never trained: its parameters have requires_grad false, it stays in
/// eval mode, and it runs under NoGradGuard. Its outputs on a batch are added to the batch under
/// the teacher's prediction names, so that losses and metrics name them as targets
/// (`{type: kl_div, prediction: logits, target: teacher_logits}`).
/// It is nobody's submodule: an optimizer over the student's module does not see it, and
/// checkpoints (which save TrainModule::weights()) do not hold it — only the config that names
/// its weights. It follows the student: each run moves it to the device it is given when it is
/// elsewhere, and floating inputs are cast to its parameters' dtype (a bf16-true student's
/// bfloat16 batch meets a float32 teacher).
///
/// Example (library path; ObjectiveModule::set_teacher hands it to a config-driven objective):
/// ```
///   auto teacher = std::make_shared<unitrain::Teacher>(unitrain::models::mlp(opts),
///       std::vector<std::string>{"x"}, std::vector<std::string>{"teacher_logits"});
///   teacher->load_weights("runs/big/checkpoints/best");
///   unitrain::Batch b = teacher->annotate(batch, torch::kCPU);  // b.at("teacher_logits")
/// ```
class Teacher {
 public:
  /// From a resolved `objective.teacher` section ({model: {type, args}, weights, inputs,
  /// predictions}): builds the model and loads its weights. ConfigError naming the key and value
  /// for a missing or unfitting weights file, and for weights: null with a model that has no
  /// weights of its own (every type but torchscript).
  explicit Teacher(const Config& section);
  explicit Teacher(const TeacherOptions& options);
  /// A model built in C++, frozen here; its weights as they are, or load_weights().
  Teacher(ModelPtr model, std::vector<std::string> inputs, std::vector<std::string> predictions);

  /// Loads the tensors at `path` (see read_model_weights: a state_dict file or a checkpoint
  /// folder) into the model, strictly: every tensor of the model, nothing else. ConfigError
  /// naming `key` and the path otherwise.
  void load_weights(const std::string& path, const std::string& key = "objective.teacher.weights");

  /// The teacher's outputs on `batch`, in the order of predictions(), computed on `device`
  /// without gradients. ConfigError for a batch missing an input (listing its keys) or a model
  /// returning another number of outputs than predictions() names.
  std::vector<torch::Tensor> predict(const Batch& batch, const torch::Device& device);
  /// `batch` with predict()'s outputs added under their names. ConfigError naming
  /// objective.teacher.predictions when the batch already has a tensor of such a name.
  Batch annotate(const Batch& batch, const torch::Device& device);

  const ModelPtr& model() const { return model_; }
  const std::vector<std::string>& inputs() const { return outputs_.inputs(); }
  const std::vector<std::string>& predictions() const { return outputs_.predictions(); }

 private:
  void freeze();
  void follow(const torch::Device& device);
  ModelOutputs outputs_;  ///< first: the names are checked before the model is built
  ModelPtr model_;
  torch::Tensor probe_;  ///< a parameter or buffer: where the model is and in which dtype
};

/// The schema of the `objective.teacher` section.
std::shared_ptr<const Schema> teacher_section_schema();

}  // namespace unitrain
