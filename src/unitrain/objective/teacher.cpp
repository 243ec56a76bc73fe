#include "unitrain/objective/teacher.h"

#include <torch/torch.h>

#include <algorithm>

#include "unitrain/checkpoint/model_weights.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

const std::string kTeacherKey = "objective.teacher";

// `names` (key `key` of `section`): at least one, none twice.
void check_distinct(const std::vector<std::string>& names, const Config& section,
                    const std::string& key) {
  UT_CHECK(!names.empty(), section.key_path(key), " must name at least one tensor");
  for (size_t i = 0; i < names.size(); ++i) {
    UT_CHECK(std::find(names.begin(), names.begin() + i, names[i]) == names.begin() + i,
             section.key_path(key), ": '", names[i], "' is listed twice");
  }
}

// The teacher's model, built after its weights are read (a missing file is reported before a
// possibly big model is built), with them loaded.
ModelPtr build_teacher_model(const TeacherOptions& o) {
  const std::string weights_key = o.path + ".weights";
  NamedTensors weights;
  if (o.weights) {
    weights = read_model_weights(*o.weights, weights_key);
  } else {
    UT_CHECK(o.model_type == "torchscript", weights_key, ": null, but a '", o.model_type,
             "' teacher has no weights of its own; give a state_dict file or a checkpoint folder "
             "(a run's checkpoints/best); only a torchscript teacher's file holds its weights");
  }
  ModelPtr model = model_registry().create(o.model);
  UT_CHECK(model != nullptr, o.model.key_path("type"), ": model '", o.model_type,
           "' was built as null");
  if (o.weights) {
    load_module_state(*model, weights, /*strict=*/true, weights_key + " " + *o.weights,
                      /*strict_key=*/"");
  }
  return model;
}

}  // namespace

void TeacherOptions::declare(Options<TeacherOptions>& o) {
  using T = TeacherOptions;
  o.key("model", Type::Section, &T::model)
      .component("model")
      .help("the teacher's model {type, args}: any registered model, torchscript too");
  o.field("weights", &T::weights)
      .help(
          "the teacher's weights: a state_dict file (as model.init_from takes) or a unitrain "
          "checkpoint folder, e.g. a run's checkpoints/best; null only for a torchscript "
          "teacher (its file holds them)");
  o.field("inputs", &T::inputs).help("batch tensors passed to the teacher, in order");
  o.field("predictions", &T::predictions)
      .help(
          "names of the teacher's outputs, in order; added to the batch, so losses take them "
          "as targets (target: teacher_logits); may not clash with a batch tensor or a "
          "student prediction");
  o.check([](T& t, const Config& c) {
    t.path = c.path();
    t.model_type = component_type(t.model);
    check_distinct(t.inputs, c, "inputs");
    check_distinct(t.predictions, c, "predictions");
  });
}

std::shared_ptr<const Schema> teacher_section_schema() {
  register_builtin_models();  // its model section names one
  return options_of<TeacherOptions>().schema();
}

Teacher::Teacher(const Config& section) : Teacher(TeacherOptions::from_config(section)) {}

Teacher::Teacher(const TeacherOptions& o)
    : outputs_("teacher model '" + o.model_type + "'", kTeacherKey, o.inputs, o.predictions),
      model_(build_teacher_model(o)) {
  freeze();
}

Teacher::Teacher(ModelPtr model, std::vector<std::string> inputs,
                 std::vector<std::string> predictions)
    : outputs_("teacher model", kTeacherKey, std::move(inputs), std::move(predictions)),
      model_(std::move(model)) {
  UT_CHECK(model_ != nullptr, "Teacher needs a model, got null");
  UT_CHECK(!this->inputs().empty() && !this->predictions().empty(),
           "Teacher needs at least one input and one prediction name");
  freeze();
}

void Teacher::freeze() {
  for (auto& p : model_->parameters()) p.requires_grad_(false);
  model_->eval();
  const auto params = model_->parameters();
  const auto buffers = model_->buffers();
  probe_ = !params.empty() ? params.front() : !buffers.empty() ? buffers.front() : torch::Tensor();
}

void Teacher::load_weights(const std::string& path, const std::string& key) {
  load_module_state(*model_, read_model_weights(path, key), /*strict=*/true, key + " " + path,
                    /*strict_key=*/"");
}

void Teacher::follow(const torch::Device& device) {
  // Module::to() replaces each tensor's data in place, so probe_ sees where the model went.
  if (probe_.defined() && probe_.device() != device) model_->to(device);
  if (model_->is_training()) model_->eval();  // a train() call on it reached it after all
}

std::vector<torch::Tensor> Teacher::predict(const Batch& batch, const torch::Device& device) {
  follow(device);
  const bool cast = probe_.defined() && probe_.is_floating_point();
  Batch inputs;  // the teacher's inputs alone, on its device and in its floating dtype
  for (const auto& name : this->inputs()) {
    torch::Tensor t = batch_tensor(batch, name, kTeacherKey + ".inputs");
    if (cast && t.is_floating_point() && t.scalar_type() != probe_.scalar_type()) {
      t = t.to(probe_.scalar_type());
    }
    inputs.set(name, t.device() == device ? t : t.to(device));
  }
  torch::NoGradGuard no_grad;
  return outputs_.run(*model_, inputs);
}

Batch Teacher::annotate(const Batch& batch, const torch::Device& device) {
  for (const auto& name : predictions()) {
    UT_CHECK(!batch.has(name), kTeacherKey, ".predictions: '", name,
             "' is also a tensor of the batch (batch keys: ", join_names(batch.names()),
             "); give the teacher's output another name, e.g. teacher_", name);
  }
  std::vector<torch::Tensor> outputs = predict(batch, device);
  Batch out = batch;
  for (size_t i = 0; i < outputs.size(); ++i) out.set(predictions()[i], std::move(outputs[i]));
  return out;
}

}  // namespace unitrain
