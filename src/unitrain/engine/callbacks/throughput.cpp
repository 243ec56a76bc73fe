#include "unitrain/engine/callbacks/throughput.h"

#include <algorithm>
#include <cmath>

#include "unitrain/engine/callback_registry.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {

void ThroughputOptions::declare(Options<ThroughputOptions>& o) {
  o.field("tokens", &ThroughputOptions::tokens)
      .help("batch tensor whose element count is the batch's tokens (e.g. x); null = no tokens/s");
}

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const double pos = q * double(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (pos - double(lo)) * (values[hi] - values[lo]);
}

void Throughput::on_train_start(Trainer& trainer) {
  period_start_ = last_step_end_ = Clock::now();
  period_samples_ = trainer.state().samples;
  tokens_ = 0;
  step_ms_.clear();
}

void Throughput::on_train_batch_start(Trainer&, const Batch& batch) {
  if (!options_.tokens.empty()) tokens_ += batch.at(options_.tokens).numel();
}

void Throughput::on_step_end(Trainer&, const MetricMap&) {
  const Clock::time_point now = Clock::now();
  step_ms_.push_back(std::chrono::duration<double, std::milli>(now - last_step_end_).count());
  last_step_end_ = now;
}

void Throughput::on_before_log(Trainer& trainer, MetricMap& metrics) {
  const Clock::time_point now = Clock::now();
  const double seconds = std::chrono::duration<double>(now - period_start_).count();
  if (seconds > 0) {
    metrics["train/samples_per_s"] = double(trainer.state().samples - period_samples_) / seconds;
    // Every rank reads batches of the same shape: this rank's tokens times the ranks.
    if (!options_.tokens.empty()) {
      metrics["train/tokens_per_s"] = double(tokens_) * trainer.world_size() / seconds;
    }
  }
  if (!step_ms_.empty()) {
    metrics["train/step_ms_p50"] = quantile(step_ms_, 0.5);
    metrics["train/step_ms_p90"] = quantile(step_ms_, 0.9);
    metrics["train/step_ms_p99"] = quantile(step_ms_, 0.99);
    metrics["train/step_ms_max"] = *std::max_element(step_ms_.begin(), step_ms_.end());
  }
  period_start_ = now;
  period_samples_ = trainer.state().samples;
  tokens_ = 0;
  step_ms_.clear();
}

void register_throughput_callback() {
  register_callback<Throughput, ThroughputOptions>(
      "throughput", "log samples/s, tokens/s and step time percentiles");
}

}  // namespace unitrain
