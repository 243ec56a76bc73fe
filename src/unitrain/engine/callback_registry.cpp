#include "unitrain/engine/callback_registry.h"

#include <mutex>

#include "unitrain/checkpoint/checkpoint_options.h"
#include "unitrain/engine/callbacks/early_stopping.h"
#include "unitrain/engine/callbacks/ema.h"
#include "unitrain/engine/callbacks/grad_norm.h"
#include "unitrain/engine/callbacks/lr_monitor.h"
#include "unitrain/engine/callbacks/model_summary.h"
#include "unitrain/engine/callbacks/throughput.h"
#include "unitrain/engine/callbacks/timer.h"

namespace unitrain {
namespace {

/// Registers callback C, built from its options struct O (declared once with Options<O>).
template <typename C, typename O>
void add(const std::string& name, const std::string& help) {
  callback_registry().add(name, help, *options_of<O>().schema(), [](const Config& args) {
    return std::make_shared<C>(options_of<O>().parse(args));
  });
}

}  // namespace

Registry<CallbackPtr>& callback_registry() {
  static Registry<CallbackPtr> registry("callback");
  return registry;
}

void register_builtin_callbacks() {
  static std::once_flag once;
  std::call_once(once, [] {
    add<EarlyStopping, EarlyStoppingOptions>(
        "early_stopping", "stop when a validation metric stops improving (same keys as the "
                          "early_stopping section)");
    add<LrMonitor, LrMonitorOptions>(
        "lr_monitor", "log the learning rate each parameter group's last step used");
    add<GradNorm, GradNormOptions>(
        "grad_norm", "log the gradient norm before clipping (and per parameter on request)");
    add<Throughput, ThroughputOptions>(
        "throughput", "log samples/s, tokens/s and step time percentiles");
    add<Timer, TimerOptions>(
        "timer", "pause (or stop) with a checkpoint after a wall-clock budget");
    add<Ema, EmaOptions>(
        "ema", "exponential moving average of the weights, used for validation, saved");
    add<ModelSummary, ModelSummaryOptions>(
        "model_summary", "log parameters per module, trainable and frozen, at the start");
  });
}

std::vector<CallbackPtr> build_callbacks(const Config& resolved) {
  register_builtin_callbacks();
  std::vector<CallbackPtr> out;
  const EarlyStoppingOptions early = EarlyStoppingOptions::from_config(resolved.at("early_stopping"));
  if (!early.metric.empty()) out.push_back(std::make_shared<EarlyStopping>(early));
  if (resolved.has("callbacks")) {
    for (const Config& c : resolved.list("callbacks")) out.push_back(callback_registry().create(c));
  }
  return out;
}

}  // namespace unitrain
