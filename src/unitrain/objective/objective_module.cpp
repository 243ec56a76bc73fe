#include "unitrain/objective/objective_module.h"

#include <algorithm>
#include <set>

#include "unitrain/core/unit_parts.h"
#include "unitrain/metrics/metric.h"
#include "unitrain/metrics/shape_check.h"
#include "unitrain/models/model.h"
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

// The term's prediction, defaulting to the first; must be one of `predictions`.
size_t prediction_of(const ObjectiveTerm& term, const std::vector<std::string>& predictions) {
  if (!term.prediction) return 0;
  const std::string& name = *term.prediction;
  UT_CHECK(contains(predictions, name), term.section.key_path("prediction"), ": '", name,
           "' is not a prediction; objective.predictions lists: ", join_names(predictions),
           " (add it there or fix the name)");
  return index_of(predictions, name);
}

// A term's component: its resolved entry, which its registry builds it from, and its type.
template <typename T>
void declare_term(Options<T>& o) {
  o.check([](T& t, const Config& c) {
    t.section = c;
    t.type = component_type(c);
  });
}

}  // namespace

struct ObjectiveModule::LossTerm {
  std::string name, type, target, key;
  size_t prediction = 0;
  double weight = 1;
  LossFn fn;
  Config section;  ///< its resolved entry (a vocabulary-parallel model's loss is made again)
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

void LossOptions::declare(Options<LossOptions>& o) {
  using T = LossOptions;
  o.field("prediction", &T::prediction)
      .help("the prediction this loss scores (default: the first of objective.predictions)");
  o.field("target", &T::target).help("the batch tensor it is compared with");
  o.field("weight", &T::weight).min(0).help("factor of this term in the loss");
  o.field("name", &T::name).help("unique name, logged as loss_<name> (default: the type)");
  declare_term(o);
}

void RegularizerOptions::declare(Options<RegularizerOptions>& o) {
  using T = RegularizerOptions;
  o.field("weight", &T::weight).gt(0).required().help("factor of this penalty in the loss");
  o.field("target", &T::target)
      .help("'params' (the trainable parameters) or a prediction name (penalty / batch size)");
  o.field("include_bias", &T::include_bias).help("also penalise biases and other 1-d parameters");
  o.field("name", &T::name).help("unique name, logged as reg_<name> (default: the type)");
  declare_term(o);
}

void MetricOptions::declare(Options<MetricOptions>& o) {
  using T = MetricOptions;
  o.field("prediction", &T::prediction)
      .help("the prediction it measures (default: the first of objective.predictions)");
  o.field("target", &T::target).help("the batch tensor it is compared with");
  o.field("name", &T::name).help("unique name it is logged under (default: the type)");
  declare_term(o);
}

void ObjectiveOptions::declare(Options<ObjectiveOptions>& o) {
  using T = ObjectiveOptions;
  const char* io = "the model's inputs and outputs are fixed";
  o.field("inputs", &T::inputs).fixed(io).help("batch tensors passed to the model, in order");
  o.field("predictions", &T::predictions).fixed(io).help("names of the model's outputs, in order");
  o.sections("losses", &T::losses)
      .component("loss")
      .help("loss terms, at least one; the loss is the weighted sum");
  o.sections("regularizers", &T::regularizers)
      .component("regularizer")
      .help("penalties added to the loss");
  o.sections("metrics", &T::metrics)
      .component("metric")
      .help("metrics logged next to the loss terms");
  o.section("teacher", &T::teacher)
      .free()
      .help(
          "a frozen model run on each batch before the losses (distillation): {model: {type, "
          "args}, weights, inputs, predictions}; its outputs join the batch under its "
          "prediction names, for losses to take as targets; null = none");
}

std::shared_ptr<const Schema> objective_section_schema() {
  // Resolving the section looks its components up: they must be in the catalog first.
  register_builtin_losses();
  register_builtin_regularizers();
  register_builtin_metrics();
  register_builtin_models();  // the teacher's
  return options_of<ObjectiveOptions>().schema();
}

ObjectiveModule::ObjectiveModule(const Config& model_section, const Config& objective_section) {
  const std::string type = component_type(model_section);  // (the section may be unresolved)
  if (!type.empty()) model_type_ = type;
  configure(objective_section);  // config errors first, before building a possibly big model
  model_ = model_registry().create(model_section);
  UT_CHECK(model_ != nullptr, model_section.key_path("type"), ": model '", model_type_,
           "' was built as null");
  register_module("model", model_);
  take_vocab_split();
}

ObjectiveModule::ObjectiveModule(ModelPtr model, const Config& objective_section)
    : model_(std::move(model)) {
  UT_CHECK(model_ != nullptr, "ObjectiveModule needs a model, got null");
  configure(objective_section);
  register_module("model", model_);
  take_vocab_split();
}

void ObjectiveModule::take_vocab_split() {
  const std::optional<VocabSplit> split = model_->vocab_split();
  if (!split) return;
  const std::string why =
      "takes the model's whole logits, which distributed.tensor_parallel cuts over its "
      "processes (the losses take cross_entropy alone)";
  for (const auto& term : losses_) term->fn = vocab_parallel_loss(term->section, *split);
  if (!metrics_.empty()) {
    const MetricTerm& m = *metrics_.front();
    throw ConfigError(detail::concat(m.key, ": the metric ", m.type, " ", why,
                                     "; leave it out under tensor parallelism (the loss is "
                                     "logged)"));
  }
  if (!regularizers_.empty()) {
    throw ConfigError(detail::concat(
        "objective.regularizers: ", regularizers_.front()->name,
        " would sum over this process's part of the parameters alone under "
        "distributed.tensor_parallel; leave it out (or use the optimizer's weight_decay)"));
  }
}

void ObjectiveModule::configure(const Config& section) {
  objective_section_schema();  // registers the components its entries name
  // A standalone section (library use) still names its keys objective.*.
  Config named = section;
  if (section.path().empty()) {
    named = Config(section.node(), "objective");
    named.share_reads(section);
  }
  const ObjectiveOptions o = options_of<ObjectiveOptions>().parse(named);
  const std::string key = named.path();
  UT_CHECK(!o.inputs.empty(), key, ".inputs must name at least one batch tensor");
  UT_CHECK(!o.predictions.empty(), key, ".predictions must name at least one model output");
  for (size_t i = 0; i < o.predictions.size(); ++i) {
    UT_CHECK(index_of(o.predictions, o.predictions[i]) == i, key, ".predictions: '",
             o.predictions[i], "' is listed twice");
  }
  outputs_ = std::make_unique<ModelOutputs>("model '" + model_type_ + "'", "objective", o.inputs,
                                            o.predictions);
  std::set<std::string> logged;  // every name reported as a metric
  add_losses(o, logged);
  UT_CHECK(!losses_.empty(), key,
           ".losses must list at least one loss, e.g. [{type: "
           "cross_entropy, prediction: ",
           o.predictions[0], ", target: y}]");
  add_regularizers(o, logged);
  add_metrics(o, logged);
  if (o.teacher) {
    check_teacher_names(o.teacher->predictions);  // before loading its weights
    BuildInParts::Paused whole;                   // frozen beside the model, never sharded
    teacher_ = std::make_shared<Teacher>(*o.teacher);
  }
}

namespace {

// Claims `metric` as a logged name; ConfigError naming `key` when it is taken.
void claim(std::set<std::string>& logged, const std::string& metric, const std::string& key) {
  UT_CHECK(metric != "loss" && logged.insert(metric).second, key, ": the name '", metric,
           "' is already used by another term or metric; give it another name");
}

}  // namespace

void ObjectiveModule::add_losses(const ObjectiveOptions& o, std::set<std::string>& logged) {
  for (const LossOptions& s : o.losses) {
    auto term = std::make_shared<LossTerm>();
    term->type = s.type;
    term->name = s.name_or_type();
    term->prediction = prediction_of(s, o.predictions);
    term->target = s.target;
    term->weight = s.weight;
    term->key = s.section.path();
    term->fn = loss_registry().create(s.section);
    term->section = s.section;
    claim(logged, "loss_" + term->name, s.section.key_path("name"));
    losses_.push_back(term);
  }
}

void ObjectiveModule::add_regularizers(const ObjectiveOptions& o, std::set<std::string>& logged) {
  for (const RegularizerOptions& s : o.regularizers) {
    auto term = std::make_shared<RegularizerTerm>();
    term->name = s.name_or_type();
    term->weight = s.weight;
    term->include_bias = s.include_bias;
    term->on_params = s.target == "params";
    if (!term->on_params) {
      UT_CHECK(contains(o.predictions, s.target), s.section.key_path("target"), ": '", s.target,
               "' is neither 'params' nor a prediction; objective.predictions lists: ",
               join_names(o.predictions));
      term->prediction = index_of(o.predictions, s.target);
    }
    term->fn = regularizer_registry().create(s.section);
    claim(logged, "reg_" + term->name, s.section.key_path("name"));
    regularizers_.push_back(term);
  }
}

void ObjectiveModule::add_metrics(const ObjectiveOptions& o, std::set<std::string>& logged) {
  for (const MetricOptions& s : o.metrics) {
    auto term = std::make_shared<MetricTerm>();
    term->type = s.type;
    term->name = s.name_or_type();
    term->prediction = prediction_of(s, o.predictions);
    term->target = s.target;
    term->key = s.section.path();
    term->fn = metric_registry().create(s.section);
    claim(logged, term->name, s.section.key_path("name"));
    metrics_.push_back(term);
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
  return losses_of(batch, outputs_->run(*model_, batch));
}

StepOutput ObjectiveModule::losses_of(const Batch& batch, const std::vector<torch::Tensor>& preds) {
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
