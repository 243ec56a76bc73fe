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

void CheckpointOptions::declare(Options<CheckpointOptions>& o) {
  using T = CheckpointOptions;
  o.field("enabled", &T::enabled).help("write checkpoints into run_dir/checkpoints");
  o.field("every", &T::every)
      .or_auto()
      .def("auto")
      .help(
          "how often to save (epochs, steps or samples); null = only the final and signal saves; "
          "auto = at an epoch's end once auto_min_seconds (10 minutes) have passed since the "
          "last save, and inside a longer epoch once auto_max_seconds (30 minutes) have");
  o.field("auto_min_seconds", &T::auto_min_seconds)
      .min(0)
      .help("every: auto saves at an epoch's end only when this many seconds (wall time) have "
            "passed since the last save or the start");
  o.field("auto_max_seconds", &T::auto_max_seconds)
      .gt(0)
      .help("every: auto saves inside an epoch once this many seconds have passed since the "
            "last save or the start");
  o.field("keep_last", &T::keep_last)
      .min(0)
      .help(
          "complete checkpoints to keep (older ones are pruned after a new one is complete; the "
          "best is always kept); 0 = keep all");
  o.field("final", &T::final).help("save a checkpoint when training ends");
  Options<T>& best = o.group("best", "track the best checkpoint by a metric");
  best.field("metric", &T::best_metric)
      .help(
          "a validation metric, e.g. val/acc: keep a `best` link to the checkpoint where it was "
          "best");
  best.key("mode", Type::String)
      .def("auto")
      .choices({"auto", "min", "max"})
      .help("min or max is better; auto = min for names with loss/perplexity/mse/mae, else max");
  best.field("threshold", &T::best_threshold)
      .help("save a best checkpoint only when the metric is also better than this value");
  best.check([](T& t, const Config& c) {
    t.best_mode = resolve_metric_mode(c.get_string("mode"), t.best_metric);
    UT_CHECK(!t.best_threshold || !t.best_metric.empty(), c.key_path("threshold"), " needs ",
             c.key_path("metric"), " to be set");
    UT_CHECK(t.best_metric.empty() || t.best_metric.find('/') != std::string::npos,
             c.key_path("metric"), " must name a logged metric with its split, e.g. val/acc; got '",
             t.best_metric, "'");
  });
  o.field("resume", &T::resume)
      .help(
          "auto (newest valid checkpoint in run_dir, else start fresh) | none | last | best | a "
          "checkpoint folder path");
  o.field("async", &T::async)
      .help("snapshot to memory and write on a background thread; the next save waits for it");
  o.check([](T& t, const Config& c) {
    const YAML::Node every = c.node()["every"];
    t.every_auto = every.IsScalar() && every.Scalar() == "auto";
    if (t.every_auto) t.every = TrainUnit::epochs(1);
    UT_CHECK(t.auto_max_seconds >= t.auto_min_seconds, c.key_path("auto_max_seconds"), " (",
             t.auto_max_seconds, ") must be at least ", c.key_path("auto_min_seconds"), " (",
             t.auto_min_seconds, ")");
    UT_CHECK(!t.every || t.every->count > 0, c.key_path("every"),
             " must be more than 0 (or null for no periodic saves), got '", t.every->str(), "'");
    UT_CHECK(!t.resume.empty(), c.key_path("resume"),
             " must be auto, none, last, best or a checkpoint folder");
  });
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

void EarlyStoppingOptions::declare(Options<EarlyStoppingOptions>& o) {
  using T = EarlyStoppingOptions;
  o.field("metric", &T::metric)
      .help("a validation metric to watch, e.g. val/loss; null = no early stopping");
  o.key("mode", Type::String)
      .def("auto")
      .choices({"auto", "min", "max"})
      .help("min or max is better; auto = min for names with loss/perplexity/mse/mae, else max");
  o.field("patience", &T::patience)
      .min(1)
      .help("validations without improvement before training stops");
  o.field("min_delta", &T::min_delta)
      .min(0)
      .help("an improvement must be larger than this to reset the patience");
  o.check(
      [](T& t, const Config& c) { t.mode = resolve_metric_mode(c.get_string("mode"), t.metric); });
}

}  // namespace unitrain
