#pragma once
// CheckpointOptions: the `checkpoint` section — when to save, what to keep, where to resume.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/metric_value.h"
#include "unitrain/core/options.h"
#include "unitrain/core/train_unit.h"

namespace unitrain {

class TrainModule;

/// A monitor's `mode`: min or max is better, or auto = the direction the metric declares.
enum class MetricMode { Auto, Min, Max };

/// Which way `metric` (a logged name with its split, e.g. "val/wer") improves: as `mode` says,
/// or for auto the direction `module` declares for its name without the split
/// (TrainModule::metric_direction: the objective's loss terms are lower-is-better, its metrics
/// as their types registered). ConfigError naming `metric_key` and `mode_key` when auto finds
/// no declared direction.
MetricDirection monitored_direction(MetricMode mode, const std::string& metric,
                                    const TrainModule& module, const std::string& metric_key,
                                    const std::string& mode_key);

/// Options of the `checkpoint` section; each key is declared once in declare(), its default
/// being the field's own.
struct CheckpointOptions {
  bool enabled = true;
  /// null: only final (and signal) saves. With every_auto, one epoch (see below).
  std::optional<TrainUnit> every = TrainUnit::epochs(1);
  /// `every: auto` (the default): at an epoch's end when auto_min_seconds have passed since the
  /// last save (or the start), and inside an epoch once auto_max_seconds have: saves never cost
  /// more than a small share of a run whose epochs take seconds, and a long epoch is not lost.
  bool every_auto = true;
  double auto_min_seconds = 600;
  double auto_max_seconds = 1800;
  int64_t keep_last = 3;    ///< complete checkpoints kept; 0 = all
  bool final = true;        ///< save when training ends
  std::string best_metric;  ///< "" = no best tracking, e.g. "val/acc"
  MetricMode best_mode = MetricMode::Auto;
  /// Which way best_metric improves: set by `mode: min|max`, or for auto by
  /// resolve_best_direction() before the run starts; improves() needs it.
  std::optional<MetricDirection> best_direction;
  std::optional<double> best_threshold;  ///< save best only when better than this
  std::string resume = "auto";           ///< auto | none | last | best | <path>
  bool async = false;                    ///< write on a background thread
  /// `on_signal`: the signals that end training with a checkpoint after the current micro-batch
  /// (names of save_signals(): SIGTERM from preemptible VMs, SIGUSR1 from Slurm's
  /// `--signal=USR1@120`), and the exit status of a run they stopped once that checkpoint is
  /// saved: "stopped on a signal, run the same command to resume". The default 75 is sysexits'
  /// EX_TEMPFAIL. SIGINT always saves and exits 130; other signals keep their default action.
  std::vector<std::string> on_signal = {"SIGTERM", "SIGUSR1"};
  int64_t on_signal_exit_code = 75;

  static void declare(Options<CheckpointOptions>& o);
  static std::shared_ptr<const Schema> schema() { return options_of<CheckpointOptions>().schema(); }
  static CheckpointOptions from_config(const Config& c) {
    return options_of<CheckpointOptions>().parse(c);
  }
  /// The numbers of the on_signal signals (names checked by the declaration).
  std::vector<int> on_signal_numbers() const;
  /// Sets best_direction for `module` (monitored_direction(); a no-op without best_metric):
  /// ConfigError naming checkpoint.best.mode when auto meets a metric that declares none.
  void resolve_best_direction(const TrainModule& module);
  /// True when `value` is better than `best` (NaN best: anything finite is) and than the
  /// threshold. Needs best_direction (TrainError otherwise).
  bool improves(double value, double best) const;
};

/// Options of the `early_stopping` section: stop when `metric` has not improved by more than
/// `min_delta` for `patience` validations. Off when metric is null.
struct EarlyStoppingOptions {
  std::string metric;                  ///< "" = off
  MetricMode mode = MetricMode::Auto;  ///< resolved by EarlyStopping when the run starts
  int64_t patience = 5;
  double min_delta = 0;

  static void declare(Options<EarlyStoppingOptions>& o);
  static std::shared_ptr<const Schema> schema() {
    return options_of<EarlyStoppingOptions>().schema();
  }
  static EarlyStoppingOptions from_config(const Config& c) {
    return options_of<EarlyStoppingOptions>().parse(c);
  }
};

}  // namespace unitrain
