#include "unitrain/checkpoint/checkpoint_options.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/save_signals.h"
#include "unitrain/core/train_module.h"

namespace unitrain {
namespace {

/// The one declaration of a monitor's `mode` key (checkpoint.best.mode, early_stopping.mode).
template <typename T>
void declare_metric_mode(Options<T>& o, MetricMode T::*member) {
  o.field("mode", member,
          {{"auto", MetricMode::Auto}, {"min", MetricMode::Min}, {"max", MetricMode::Max}})
      .help(
          "min or max is better; auto = the direction the metric declares (loss and loss terms: "
          "min; an objective metric: as its type registers it); a metric that declares none "
          "needs min or max");
}

/// A mode set to min or max, as a direction; nullopt for auto.
std::optional<MetricDirection> explicit_direction(MetricMode mode) {
  if (mode == MetricMode::Min) return MetricDirection::LowerIsBetter;
  if (mode == MetricMode::Max) return MetricDirection::HigherIsBetter;
  return std::nullopt;
}

/// checkpoint.on_signal: which signals save and stop, and the exit status that follows.
void declare_on_signal(Options<CheckpointOptions>& o) {
  using T = CheckpointOptions;
  Options<T>& on_signal = o.group(
      "on_signal",
      "signals that end training with a checkpoint and a distinct exit status (preemption, a "
      "scheduler's time limit); SIGINT always saves and exits 130, a second SIGINT at once");
  on_signal.field("signals", &T::on_signal)
      .help(
          "signals that finish the current micro-batch, save a checkpoint and exit with "
          "exit_code: SIGTERM, SIGUSR1, SIGUSR2, SIGHUP, SIGXCPU (USR1 = SIGUSR1); [] = none, "
          "they then end the process as by default");
  on_signal.field("exit_code", &T::on_signal_exit_code)
      .min(1)
      .max(125)
      .help(
          "exit status after such a signal once the checkpoint is saved, for a requeueing "
          "script to tell from a failure (1) and to run the same command again; 75 = "
          "EX_TEMPFAIL");
  on_signal.check([](T& t, const Config& c) {
    std::vector<std::string> known;
    for (const SaveSignal& s : save_signals()) known.push_back(s.name);
    for (const std::string& name : t.on_signal) {
      UT_CHECK(save_signal_number(name).has_value(), c.key_path("signals"), ": unknown signal '",
               name, "'; known: ", some_names(known, known.size()), " (SIGINT always saves)");
    }
  });
}

}  // namespace

std::vector<int> CheckpointOptions::on_signal_numbers() const {
  std::vector<int> numbers;
  for (const std::string& name : on_signal) {
    const std::optional<int> n = save_signal_number(name);
    UT_CHECK(n.has_value(), "checkpoint.on_signal.signals: unknown signal '", name, "'");
    numbers.push_back(*n);
  }
  return numbers;
}

namespace {

/// A name one edit (a character deleted, inserted or, in names of 5 or more, replaced; or two
/// swapped) from `name` for which `module` declares a direction, or "": the metric `name` was
/// probably meant to be. Short names one letter apart are often two metrics (cer, wer; mae, mse).
std::string declared_neighbour(const std::string& name, const TrainModule& module) {
  static const std::string kChars = "abcdefghijklmnopqrstuvwxyz0123456789_-";
  std::vector<std::string> tries;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i < name.size()) tries.push_back(name.substr(0, i) + name.substr(i + 1));
    if (i + 1 < name.size()) {
      std::string swapped = name;
      std::swap(swapped[i], swapped[i + 1]);
      tries.push_back(swapped);
    }
    for (char c : kChars) {
      tries.push_back(name.substr(0, i) + c + name.substr(i));
      if (i < name.size() && name.size() >= 5)
        tries.push_back(name.substr(0, i) + c + name.substr(i + 1));
    }
  }
  for (const std::string& t : tries) {
    if (t != name && !t.empty() && module.metric_direction(t)) return t;
  }
  return "";
}

}  // namespace

MetricDirection monitored_direction(MetricMode mode, const std::string& metric,
                                    const TrainModule& module, const std::string& metric_key,
                                    const std::string& mode_key) {
  const size_t slash = metric.find('/');
  const std::string name = slash == std::string::npos ? metric : metric.substr(slash + 1);
  std::optional<MetricDirection> declared = module.metric_direction(name);
  // One edit from a declared name and declared by nothing: a typo, with a mode given or not
  // (else it is found at the first validation, an epoch later).
  const std::string near = declared ? "" : declared_neighbour(name, module);
  const std::optional<MetricDirection> given = explicit_direction(mode);
  UT_CHECK(near.empty(), metric_key, ": ", metric,
           " is not a metric the module declares; did you "
           "mean ",
           metric.substr(0, metric.size() - name.size()), near, "? (",
           given ? "a metric of your own needs a name that is not one letter from a declared "
                   "one"
                 : "a metric of your own that the module reports without a direction: set " +
                       mode_key + ": min or max",
           ")");
  if (given) return *given;
  UT_CHECK(declared.has_value(), metric_key, ": ", metric, " has no declared direction ",
           "(neither its metric's registration nor the module says whether a higher or a lower '",
           name, "' is better); set ", mode_key, ": min or max");
  return *declared;
}

void CheckpointOptions::declare(Options<CheckpointOptions>& o) {
  using T = CheckpointOptions;
  o.field("enabled", &T::enabled).help("write checkpoints into run_dir/checkpoints");
  o.field_or_auto("every", &T::every, &T::every_auto)
      .help(
          "how often to save (epochs, steps or samples); null = only the final and signal saves; "
          "auto = at an epoch's end once auto_min_seconds (10 minutes) have passed since the "
          "last save, and inside a longer epoch once auto_max_seconds (30 minutes) have");
  o.field("auto_min_seconds", &T::auto_min_seconds)
      .min(0)
      .help(
          "every: auto saves at an epoch's end only when this many seconds (wall time) have "
          "passed since the last save or the start");
  o.field("auto_max_seconds", &T::auto_max_seconds)
      .gt(0)
      .help(
          "every: auto saves inside an epoch once this many seconds have passed since the "
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
  declare_metric_mode(best, &T::best_mode);
  best.field("threshold", &T::best_threshold)
      .help("save a best checkpoint only when the metric is also better than this value");
  best.check([](T& t, const Config& c) {
    t.best_direction = explicit_direction(t.best_mode);
    UT_CHECK(!t.best_threshold || !t.best_metric.empty(), c.key_path("threshold"), " needs ",
             c.key_path("metric"), " to be set");
    UT_CHECK(t.best_metric.empty() || t.best_metric.find('/') != std::string::npos,
             c.key_path("metric"), " must name a logged metric with its split, e.g. val/acc; got '",
             t.best_metric, "'");
  });
  o.field("resume", &T::resume)
      .help(
          "auto (newest valid checkpoint in run_dir, else start fresh) | none (a new run; a run "
          "stopped by a save signal or paused is continued) | last | best | a checkpoint folder "
          "path (for this invocation: the run's config.yaml records auto)");
  o.field("async", &T::async)
      .help("snapshot to memory and write on a background thread; the next save waits for it");
  declare_on_signal(o);
  o.check([](T& t, const Config& c) {
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

void CheckpointOptions::resolve_best_direction(const TrainModule& module) {
  if (best_metric.empty()) return;
  best_direction = monitored_direction(best_mode, best_metric, module, "checkpoint.best.metric",
                                       "checkpoint.best.mode");
}

bool CheckpointOptions::improves(double value, double best) const {
  UT_CHECK_TRAIN(best_direction.has_value(), "checkpoint.best.mode: auto was not resolved for ",
                 best_metric, " (call CheckpointOptions::resolve_best_direction first)");
  if (!std::isfinite(value)) return false;
  const bool lower = *best_direction == MetricDirection::LowerIsBetter;
  if (best_threshold) {
    const bool beyond = lower ? value < *best_threshold : value > *best_threshold;
    if (!beyond) return false;
  }
  if (std::isnan(best)) return true;
  return lower ? value < best : value > best;
}

void EarlyStoppingOptions::declare(Options<EarlyStoppingOptions>& o) {
  using T = EarlyStoppingOptions;
  o.field("metric", &T::metric)
      .help("a validation metric to watch, e.g. val/loss; null = no early stopping");
  declare_metric_mode(o, &T::mode);
  o.field("patience", &T::patience)
      .min(1)
      .help("validations without improvement before training stops");
  o.field("min_delta", &T::min_delta)
      .min(0)
      .help("an improvement must be larger than this to reset the patience");
}

}  // namespace unitrain
