#include "unitrain/objective/objective_module.h"

#include <algorithm>
#include <set>

#include "unitrain/metrics/metric.h"
#include "unitrain/metrics/shape_check.h"
#include "unitrain/objective/loss.h"
#include "unitrain/objective/teacher.h"

namespace unitrain {
namespace {

bool contains(const std::vector<std::string>& items, const std::string& x) {
  return std::find(items.begin(), items.end(), x) != items.end();
}

size_t index_of(const std::vector<std::string>& items, const std::string& x) {
  return std::find(items.begin(), items.end(), x) - items.begin();
}

// `section.prediction`, defaulting to the first prediction; must be one of `predictions`.
size_t prediction_of(const Config& section, const std::vector<std::string>& predictions) {
  if (!section.has("prediction")) return 0;
  std::string name = section.get_string("prediction");
  UT_CHECK(contains(predictions, name), section.key_path("prediction"), ": '", name,
           "' is not a prediction; objective.predictions lists: ", join_names(predictions),
           " (add it there or fix the name)");
  return index_of(predictions, name);
}

std::string name_of(const Config& section) {
  return section.has("name") ? section.get_string("name") : section.get_string("type");
}

}  // namespace

struct ObjectiveModule::LossTerm {
  std::string name, type, target, key;
  size_t prediction = 0;
  double weight = 1;
  LossFn fn;
};

struct ObjectiveModule::RegularizerTerm {
  std::string name;
  double weight = 1;
  bool on_params = true;
  size_t prediction = 0;  // when !on_params
  bool include_bias = false;
  RegularizerFn fn;
};

struct ObjectiveModule::MetricTerm {
  std::string name, type, target, key;
  size_t prediction = 0;
  MetricFn fn;
};

std::shared_ptr<const Schema> objective_section_schema() {
  // Resolving the section looks its components up: they must be in the catalog first.
  register_builtin_losses();
  register_builtin_regularizers();
  register_builtin_metrics();
  static const std::shared_ptr<const Schema> schema = [] {
    auto loss = std::make_shared<Schema>();
    loss->add("prediction", Type::String)
        .nullable()
        .help("the prediction this loss scores (default: the first of objective.predictions)");
    loss->add("target", Type::String).def("y").help("the batch tensor it is compared with");
    loss->add("weight", Type::Float).def(1.0).min(0).help("factor of this term in the loss");
    loss->add("name", Type::String)
        .nullable()
        .help("unique name, logged as loss_<name> (default: the type)");

    auto reg = std::make_shared<Schema>();
    reg->add("weight", Type::Float).gt(0).help("factor of this penalty in the loss");
    reg->add("target", Type::String)
        .def("params")
        .help("'params' (the trainable parameters) or a prediction name (penalty / batch size)");
    reg->add("include_bias", Type::Bool)
        .def(false)
        .help("also penalise biases and other 1-d parameters");
    reg->add("name", Type::String)
        .nullable()
        .help("unique name, logged as reg_<name> (default: the type)");

    auto metric = std::make_shared<Schema>();
    metric->add("prediction", Type::String)
        .nullable()
        .help("the prediction it measures (default: the first of objective.predictions)");
    metric->add("target", Type::String).def("y").help("the batch tensor it is compared with");
    metric->add("name", Type::String)
        .nullable()
        .help("unique name it is logged under (default: the type)");

    auto s = std::make_shared<Schema>();
    const char* io = "the model's inputs and outputs are fixed";
    s->add("inputs", Type::StringList)
        .def("[x]")
        .fixed(io)
        .help("batch tensors passed to the model, in order");
    s->add("predictions", Type::StringList)
        .def("[logits]")
        .fixed(io)
        .help("names of the model's outputs, in order");
    s->add("losses", Type::SectionList)
        .component("loss")
        .section(loss)
        .help("loss terms, at least one; the loss is the weighted sum");
    s->add("regularizers", Type::SectionList)
        .component("regularizer")
        .section(reg)
        .help("penalties added to the loss");
    s->add("metrics", Type::SectionList)
        .component("metric")
        .section(metric)
        .help("metrics logged next to the loss terms");
    s->add("teacher", Type::Section)
        .section(teacher_section_schema())
        .nullable()
        .free()
        .help(
            "a frozen model run on each batch before the losses (distillation): {model: {type, "
            "args}, weights, inputs, predictions}; its outputs join the batch under its "
            "prediction names, for losses to take as targets; null = none");
    return s;
  }();
  return schema;
}

ObjectiveModule::ObjectiveModule(const Config& model_section, const Config& objective_section) {
  model_type_ = model_section.has("type") ? model_section.get_string("type") : "model";
  configure(objective_section);  // config errors first, before building a possibly big model
  model_ = model_registry().create(model_section);
  UT_CHECK(model_ != nullptr, model_section.key_path("type"), ": model '", model_type_,
           "' was built as null");
  register_module("model", model_);
}

ObjectiveModule::ObjectiveModule(ModelPtr model, const Config& objective_section)
    : model_(std::move(model)) {
  UT_CHECK(model_ != nullptr, "ObjectiveModule needs a model, got null");
  configure(objective_section);
  register_module("model", model_);
}

void ObjectiveModule::configure(const Config& section) {
  // A standalone section (library use) still names its keys objective.*.
  Config objective = objective_section_schema()->resolve(
      section.path().empty() ? Config(section.node(), "objective") : section);

  const std::vector<std::string> inputs = objective.get_string_list("inputs");
  const std::vector<std::string> predictions = objective.get_string_list("predictions");
  UT_CHECK(!inputs.empty(), objective.key_path("inputs"), " must name at least one batch tensor");
  UT_CHECK(!predictions.empty(), objective.key_path("predictions"),
           " must name at least one model output");
  for (size_t i = 0; i < predictions.size(); ++i) {
    UT_CHECK(index_of(predictions, predictions[i]) == i, objective.key_path("predictions"), ": '",
             predictions[i], "' is listed twice");
  }
  outputs_ = std::make_unique<ModelOutputs>("model '" + model_type_ + "'", "objective", inputs,
                                            predictions);

  std::set<std::string> logged;  // every name reported as a metric
  auto claim = [&logged](const std::string& metric, const std::string& key) {
    UT_CHECK(metric != "loss" && logged.insert(metric).second, key, ": the name '", metric,
             "' is already used by another term or metric; give it another name");
  };

  for (const Config& s : objective.list("losses")) {
    auto term = std::make_shared<LossTerm>();
    term->type = s.get_string("type");
    term->name = name_of(s);
    term->prediction = prediction_of(s, predictions);
    term->target = s.get_string("target");
    term->weight = s.get_double("weight");
    term->key = s.path();
    term->fn = loss_registry().create(s);
    claim("loss_" + term->name, s.key_path("name"));
    losses_.push_back(term);
  }
  UT_CHECK(!losses_.empty(), objective.key_path("losses"),
           " must list at least one loss, e.g. [{type: cross_entropy, prediction: ", predictions[0],
           ", target: y}]");

  for (const Config& s : objective.list("regularizers")) {
    auto term = std::make_shared<RegularizerTerm>();
    term->name = name_of(s);
    term->weight = s.get_double("weight");
    term->include_bias = s.get_bool("include_bias");
    std::string target = s.get_string("target");
    term->on_params = target == "params";
    if (!term->on_params) {
      UT_CHECK(contains(predictions, target), s.key_path("target"), ": '", target,
               "' is neither 'params' nor a prediction; objective.predictions lists: ",
               join_names(predictions));
      term->prediction = index_of(predictions, target);
    }
    term->fn = regularizer_registry().create(s);
    claim("reg_" + term->name, s.key_path("name"));
    regularizers_.push_back(term);
  }

  for (const Config& s : objective.list("metrics")) {
    auto term = std::make_shared<MetricTerm>();
    term->type = s.get_string("type");
    term->name = name_of(s);
    term->prediction = prediction_of(s, predictions);
    term->target = s.get_string("target");
    term->key = s.path();
    term->fn = metric_registry().create(s);
    claim(term->name, s.key_path("name"));
    metrics_.push_back(term);
  }

  if (objective.has("teacher")) {
    const Config teacher = objective.at("teacher");
    check_teacher_names(teacher.get_string_list("predictions"));  // before loading its weights
    teacher_ = std::make_shared<Teacher>(teacher);
  }
}

void ObjectiveModule::check_teacher_names(
    const std::vector<std::string>& teacher_predictions) const {
  for (const auto& name : teacher_predictions) {
    UT_CHECK(
        !contains(predictions(), name), "objective.teacher.predictions: '", name,
        "' is also a prediction of the student (objective.predictions: ", join_names(predictions()),
        "); give the teacher's output another name, e.g. teacher_", name);
  }
}

void ObjectiveModule::set_teacher(std::shared_ptr<Teacher> teacher) {
  if (teacher) check_teacher_names(teacher->predictions());
  teacher_ = std::move(teacher);
}

torch::Device ObjectiveModule::student_device(const Batch& batch) {
  if (!device_probe_.defined()) {
    const std::vector<torch::Tensor> params = model_->parameters();
    if (!params.empty()) device_probe_ = params.front();  // follows the model's to(device)
  }
  return device_probe_.defined()
             ? device_probe_.device()
             : batch_tensor(batch, inputs().front(), "objective.inputs").device();
}

StepOutput ObjectiveModule::run(const Batch& input) {
  // The teacher first: its outputs join the batch as targets.
  Batch with_teacher;
  if (teacher_) with_teacher = teacher_->annotate(input, student_device(input));
  const Batch& batch = teacher_ ? with_teacher : input;
  std::vector<torch::Tensor> preds = outputs_->run(*model_, batch);
  StepOutput out;
  const bool report_terms = losses_.size() > 1 || !regularizers_.empty();
  torch::Tensor total;
  auto add = [&total](const torch::Tensor& t) { total = total.defined() ? total + t : t; };

  for (const auto& term : losses_) {
    const torch::Tensor& target = batch_tensor(batch, term->target, term->key, ".target");
    torch::Tensor value;
    try {
      value = term->fn(preds[term->prediction], target);
    } catch (const PredictionTargetError& e) {
      throw ConfigError(e.named(predictions()[term->prediction], term->target));
    }
    add(term->weight == 1.0 ? value : term->weight * value);
    if (report_terms) out.metrics["loss_" + term->name] = MetricValue(value.detach());
  }

  for (const auto& term : regularizers_) {
    torch::Tensor value;
    if (term->on_params) {
      std::vector<torch::Tensor> params;
      for (const auto& p : model_->parameters()) {
        if (p.requires_grad() && (term->include_bias || p.dim() > 1)) params.push_back(p);
      }
      value = term->fn(params);
    } else {
      const torch::Tensor& pred = preds[term->prediction];
      value = term->fn({pred}) / (pred.dim() == 0 ? 1 : std::max<int64_t>(pred.size(0), 1));
    }
    add(term->weight * value);
    out.metrics["reg_" + term->name] = MetricValue(value.detach());
  }
  out.loss = total;

  torch::NoGradGuard no_grad;
  for (const auto& term : metrics_) {
    const torch::Tensor& target = batch_tensor(batch, term->target, term->key, ".target");
    try {
      out.metrics[term->name] = term->fn(preds[term->prediction].detach(), target);
    } catch (const PredictionTargetError& e) {
      throw ConfigError(e.named(predictions()[term->prediction], term->target));
    }
  }
  return out;
}

std::optional<MetricDirection> ObjectiveModule::metric_direction(const std::string& name) const {
  if (name == "loss") return MetricDirection::LowerIsBetter;
  for (const auto& term : losses_) {
    if (name == "loss_" + term->name) return MetricDirection::LowerIsBetter;
  }
  for (const auto& term : regularizers_) {
    if (name == "reg_" + term->name) return MetricDirection::LowerIsBetter;
  }
  for (const auto& term : metrics_) {
    if (name == term->name) return metric_registry().direction(term->type);
  }
  return std::nullopt;
}

StepOutput ObjectiveModule::training_step(const Batch& batch) { return run(batch); }

StepOutput ObjectiveModule::validation_step(const Batch& batch) { return run(batch); }

}  // namespace unitrain
