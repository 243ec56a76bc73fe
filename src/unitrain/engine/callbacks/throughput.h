#pragma once
// Throughput: samples/s, tokens/s and step time percentiles in the training logs.
#include <chrono>
#include <string>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/engine/callback.h"

namespace unitrain {

struct ThroughputOptions {
  /// The batch tensor whose element count is a batch's tokens (e.g. `x` of a language model's
  /// [batch, time] ids); "" = no tokens/s.
  std::string tokens;
  static void declare(Options<ThroughputOptions>& o);
};

/// Adds to each training log event, over the steps since the last one (all ranks together):
/// `train/samples_per_s`, `train/tokens_per_s` (with `tokens`), and the wall time between
/// consecutive optimizer steps' ends (data wait, forward, backward, sync, update and any
/// logging, validation or save in between) as `train/step_ms_p50`, `_p90`, `_p99` and `_max`.
class Throughput : public Callback {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Throughput(ThroughputOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "throughput"; }
  bool reads_step_values() const override { return false; }
  bool hooks_inside_step() const override { return false; }
  void on_train_start(Trainer& trainer) override;
  void on_train_batch_start(Trainer& trainer, const Batch& batch) override;
  void on_step_end(Trainer& trainer, const MetricMap& metrics) override;
  void on_before_log(Trainer& trainer, MetricMap& metrics) override;

 private:
  ThroughputOptions options_;
  Clock::time_point period_start_, last_step_end_;
  int64_t period_samples_ = 0;  ///< the trainer's sample count when the period began
  int64_t tokens_ = 0;          ///< this rank's tokens in the period
  std::vector<double> step_ms_;
};

/// The q-th quantile (0..1) of `values` by linear interpolation between order statistics (as
/// numpy's default); NaN for none.
double quantile(std::vector<double> values, double q);

/// Registers callback `throughput` (its name, help and args) in callback_registry();
/// register_builtin_callbacks() calls it.
void register_throughput_callback();

}  // namespace unitrain
