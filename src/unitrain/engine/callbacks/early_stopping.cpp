#include "unitrain/engine/callbacks/early_stopping.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "unitrain/core/error.h"
#include "unitrain/engine/callback_registry.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/log/console_tracker.h"

namespace unitrain {
namespace {
constexpr const char* kEarlyStoppingEntry = "early_stopping.json";
}  // namespace

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : options_(std::move(options)) {
  UT_CHECK(!options_.metric.empty(), "callback early_stopping: set args.metric, the validation ",
           "metric to watch (e.g. val/loss)");
}

void EarlyStopping::resolve_direction(const TrainModule& module) {
  direction_ = monitored_direction(options_.mode, options_.metric, module, "early_stopping.metric",
                                   "early_stopping.mode");
}

MetricDirection EarlyStopping::direction(const Trainer& trainer) {
  if (direction_) return *direction_;
  if (const TrainModule* module = trainer.module()) {
    resolve_direction(*module);
    return *direction_;
  }
  UT_CHECK(options_.mode != MetricMode::Auto,
           "early_stopping.mode: auto follows the module being trained, and there is none "
           "outside fit(); set early_stopping.mode: min or max");
  return options_.mode == MetricMode::Min ? MetricDirection::LowerIsBetter
                                          : MetricDirection::HigherIsBetter;
}

void EarlyStopping::on_fit_start(Trainer& trainer) {
  direction_.reset();  // each fit() follows its own module
  direction(trainer);
}

void EarlyStopping::on_validation_end(Trainer& trainer, const MetricMap& metrics) {
  const double v = monitored(metrics, options_.metric, "early_stopping.metric");
  const bool lower = direction(trainer) == MetricDirection::LowerIsBetter;
  const bool better = std::isnan(best_) ||
                      (lower ? v < best_ - options_.min_delta : v > best_ + options_.min_delta);
  if (better) {
    best_ = v;
    stalls_ = 0;
    return;
  }
  if (++stalls_ >= options_.patience) {
    trainer.print(fmt::format("early stopping: {} has not improved on {} for {} validations",
                              options_.metric, format_metric(best_), stalls_));
    trainer.request_stop();
  }
}

void EarlyStopping::on_save_checkpoint(Trainer&, CheckpointEntries& entries) {
  nlohmann::json j;
  j["metric"] = options_.metric;
  j["best"] = std::isnan(best_) ? nlohmann::json() : nlohmann::json(best_);  // null: none yet
  j["stalls"] = stalls_;
  entries[kEarlyStoppingEntry] = j.dump() + "\n";
}

void EarlyStopping::on_load_checkpoint(Trainer&, const CheckpointEntries& entries) {
  auto it = entries.find(kEarlyStoppingEntry);
  if (it == entries.end()) return;  // saved before early stopping was on: start counting now
  const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
  UT_CHECK_TRAIN(j.is_object(), "the checkpoint's ", kEarlyStoppingEntry, " is not valid JSON");
  if (j.value("metric", std::string()) != options_.metric) return;  // it watched another metric
  best_ =
      j["best"].is_number() ? j["best"].get<double>() : std::numeric_limits<double>::quiet_NaN();
  stalls_ = j.value("stalls", int64_t(0));
}

void register_early_stopping_callback() {
  register_callback<EarlyStopping, EarlyStoppingOptions>(
      "early_stopping",
      "stop when a validation metric stops improving (same keys as the early_stopping section)");
}

}  // namespace unitrain
