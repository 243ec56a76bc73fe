#include "unitrain/engine/callback_registry.h"

#include <mutex>

#include "unitrain/engine/callbacks/early_stopping.h"
#include "unitrain/engine/callbacks/ema.h"
#include "unitrain/engine/callbacks/grad_norm.h"
#include "unitrain/engine/callbacks/lr_monitor.h"
#include "unitrain/engine/callbacks/model_summary.h"
#include "unitrain/engine/callbacks/throughput.h"
#include "unitrain/engine/callbacks/timer.h"
#include "unitrain/engine/run_settings.h"

namespace unitrain {

Registry<CallbackPtr>& callback_registry() {
  static Registry<CallbackPtr> registry("callback");
  return registry;
}

void register_builtin_callbacks() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_early_stopping_callback();
    register_lr_monitor_callback();
    register_grad_norm_callback();
    register_throughput_callback();
    register_timer_callback();
    register_ema_callback();
    register_model_summary_callback();
  });
}

std::vector<CallbackPtr> build_callbacks(const Config& resolved) {
  register_builtin_callbacks();
  std::vector<CallbackPtr> out;
  const RunSettings run = RunSettings::from_config(resolved);
  if (!run.early_stopping.metric.empty()) {
    out.push_back(std::make_shared<EarlyStopping>(run.early_stopping));
  }
  for (const Config& c : run.callbacks) out.push_back(callback_registry().create(c));
  return out;
}

}  // namespace unitrain
