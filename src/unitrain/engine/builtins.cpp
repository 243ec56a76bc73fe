#include "unitrain/engine/builtins.h"

#include <mutex>

#include "unitrain/data/dataset.h"
#include "unitrain/engine/callback_registry.h"
#include "unitrain/log/tracker.h"
#include "unitrain/metrics/metric.h"
#include "unitrain/models/model.h"
#include "unitrain/objective/loss.h"
#include "unitrain/optim/optimizer.h"
#include "unitrain/optim/scheduler.h"

namespace unitrain {

void register_builtins() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_builtin_datasets();
    register_builtin_models();
    register_builtin_losses();
    register_builtin_regularizers();
    register_builtin_metrics();
    register_builtin_optimizers();
    register_builtin_schedulers();
    register_builtin_trackers();
    register_builtin_callbacks();
  });
}

}  // namespace unitrain
