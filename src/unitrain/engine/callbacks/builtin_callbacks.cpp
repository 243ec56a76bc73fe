// register_builtin_callbacks() (declared in callback_registry.h): each built-in callback's own
// register function, called once, in a fixed order.
#include <mutex>

#include "unitrain/engine/callback_registry.h"
#include "unitrain/engine/callbacks/early_stopping.h"
#include "unitrain/engine/callbacks/ema.h"
#include "unitrain/engine/callbacks/generate_samples.h"
#include "unitrain/engine/callbacks/grad_norm.h"
#include "unitrain/engine/callbacks/lr_monitor.h"
#include "unitrain/engine/callbacks/model_summary.h"
#include "unitrain/engine/callbacks/throughput.h"
#include "unitrain/engine/callbacks/timer.h"

namespace unitrain {

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
    register_generate_callback();
  });
}

}  // namespace unitrain
