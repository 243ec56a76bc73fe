#include "unitrain/checkpoint/checkpoint_options.h"

#include <cmath>

#include "unitrain/core/error.h"

namespace unitrain {

MetricMode resolve_metric_mode(const std::string& mode, const std::string& metric) {
  if (mode == "min") return MetricMode::Min;
  if (mode == "max") return MetricMode::Max;
  for (const char* lower_is_better : {"loss", "perplexity", "mse", "mae"}) {
    if (metric.find(lower_is_better) != std::string::npos) return MetricMode::Min;
  }
  return MetricMode::Max;
}

std::shared_ptr<const Schema> CheckpointOptions::schema() {
  static auto s = [] {
    auto best = std::make_shared<Schema>();
    best->add("metric", Type::String).nullable().help(
        "a validation metric, e.g. val/acc: keep a `best` link to the checkpoint where it was best");
    best->add("mode", Type::String).def("auto").choices({"auto", "min", "max"}).help(
        "min or max is better; auto = min for names with loss/perplexity/mse/mae, else max");
    best->add("threshold", Type::Float).nullable().help(
        "save a best checkpoint only when the metric is also better than this value");

    auto s = std::make_shared<Schema>();
    s->add("enabled", Type::Bool).def(true).help("write checkpoints into run_dir/checkpoints");
    s->add("every", Type::Duration).def("1 epoch").nullable().help(
        "how often to save (epochs, steps or samples); null = only the final and signal saves");
    s->add("keep_last", Type::Int).def(3).min(0).help(
        "complete checkpoints to keep (older ones are pruned after a new one is complete; the "
        "best is always kept); 0 = keep all");
    s->add("final", Type::Bool).def(true).help("save a checkpoint when training ends");
    s->add("best", Type::Section).section(best).help("track the best checkpoint by a metric");
    s->add("resume", Type::String).def("auto").help(
        "auto (newest valid checkpoint in run_dir, else start fresh) | none | last | best | a "
        "checkpoint folder path");
    s->add("async", Type::Bool).def(false).help(
        "snapshot to memory and write on a background thread; the next save waits for it");
    return s;
  }();
  return s;
}

CheckpointOptions CheckpointOptions::from_config(const Config& c) {
  CheckpointOptions o;
  o.enabled = c.get_bool("enabled");
  o.every = c.has("every") ? std::optional<TrainUnit>(c.get_duration("every")) : std::nullopt;
  UT_CHECK(!o.every || o.every->count > 0, c.key_path("every"),
           " must be more than 0 (or null for no periodic saves), got '", o.every->str(), "'");
  o.keep_last = c.get_int("keep_last");
  o.final = c.get_bool("final");
  Config best = c.at("best");
  o.best_metric = best.has("metric") ? best.get_string("metric") : "";
  o.best_mode = resolve_metric_mode(best.get_string("mode"), o.best_metric);
  if (best.has("threshold")) o.best_threshold = best.get_double("threshold");
  UT_CHECK(!o.best_threshold || !o.best_metric.empty(), best.key_path("threshold"),
           " needs ", best.key_path("metric"), " to be set");
  UT_CHECK(o.best_metric.empty() || o.best_metric.find('/') != std::string::npos,
           best.key_path("metric"), " must name a logged metric with its split, e.g. val/acc; got '",
           o.best_metric, "'");
  o.resume = c.get_string("resume");
  UT_CHECK(!o.resume.empty(), c.key_path("resume"),
           " must be auto, none, last, best or a checkpoint folder");
  o.async = c.get_bool("async");
  return o;
}

bool CheckpointOptions::improves(double value, double best) const {
  if (!std::isfinite(value)) return false;
  if (best_threshold) {
    const bool beyond = best_mode == MetricMode::Min ? value < *best_threshold
                                                     : value > *best_threshold;
    if (!beyond) return false;
  }
  if (std::isnan(best)) return true;
  return best_mode == MetricMode::Min ? value < best : value > best;
}

std::shared_ptr<const Schema> EarlyStoppingOptions::schema() {
  static auto s = [] {
    auto s = std::make_shared<Schema>();
    s->add("metric", Type::String).nullable().help(
        "a validation metric to watch, e.g. val/loss; null = no early stopping");
    s->add("mode", Type::String).def("auto").choices({"auto", "min", "max"}).help(
        "min or max is better; auto = min for names with loss/perplexity/mse/mae, else max");
    s->add("patience", Type::Int).def(5).min(1).help(
        "validations without improvement before training stops");
    s->add("min_delta", Type::Float).def(0.0).min(0).help(
        "an improvement must be larger than this to reset the patience");
    return s;
  }();
  return s;
}

EarlyStoppingOptions EarlyStoppingOptions::from_config(const Config& c) {
  EarlyStoppingOptions o;
  o.metric = c.has("metric") ? c.get_string("metric") : "";
  o.mode = resolve_metric_mode(c.get_string("mode"), o.metric);
  o.patience = c.get_int("patience");
  o.min_delta = c.get_double("min_delta");
  return o;
}

}  // namespace unitrain
