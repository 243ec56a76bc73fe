#include "unitrain/engine/results/profile_files.h"

#include <fmt/format.h>

#include "unitrain/core/atomic_file.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/engine/setup/run_folder.h"
#include "unitrain/log/console.h"
#include "unitrain/profile/profiler.h"

namespace unitrain {

void write_profile(const ProfileResult& p, const RunSettings& settings, int rank, int64_t steps) {
  if (p.steps == 0) {
    log::warn(
        fmt::format("profile: no step was recorded (the run took {} steps; profile.wait + "
                    "profile.warmup is {})",
                    steps, settings.profile.wait + settings.profile.warmup));
    return;
  }
  log::info(p.table);
  if (settings.train.test_mode) return;  // no run folder
  const std::string dir = settings.run_dir + "/profile";
  prepare_writable_dir(dir);
  const std::string suffix = rank == 0 ? "" : fmt::format("-rank-{}", rank);
  write_file_atomic(dir + "/summary" + suffix + ".json", p.summary_json);
  if (!p.trace_json.empty()) {
    write_file_atomic(fmt::format("{}/trace-rank-{}.json", dir, rank), p.trace_json);
  }
  log::file_only("profile: " + dir + "/summary" + suffix + ".json" +
                 (p.trace_json.empty() ? "" : fmt::format(", trace-rank-{}.json", rank)));
}

}  // namespace unitrain
