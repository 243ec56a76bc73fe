#include "unitrain/log/tracker.h"

#include <mutex>

#include "unitrain/log/console_tracker.h"
#include "unitrain/log/file_trackers.h"
#include "unitrain/log/tensorboard_tracker.h"

namespace unitrain {

Registry<TrackerPtr, const LogOptions&>& tracker_registry() {
  static Registry<TrackerPtr, const LogOptions&> registry("tracker");
  return registry;
}

void register_builtin_trackers() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_console_tracker();
    register_file_trackers();
    register_tensorboard_tracker();
  });
}

}  // namespace unitrain
