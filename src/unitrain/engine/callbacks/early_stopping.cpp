#include "unitrain/engine/callbacks/early_stopping.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "unitrain/core/error.h"
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

void EarlyStopping::on_validation_end(Trainer& trainer, const MetricMap& metrics) {
  const double v = monitored(metrics, options_.metric, "early_stopping.metric");
  const bool better = std::isnan(best_) ||
                      (options_.mode == MetricMode::Min ? v < best_ - options_.min_delta
                                                        : v > best_ + options_.min_delta);
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
  best_ = j["best"].is_number() ? j["best"].get<double>() : std::numeric_limits<double>::quiet_NaN();
  stalls_ = j.value("stalls", int64_t(0));
}

}  // namespace unitrain
