#include "unitrain/engine/setup/run_threads.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cstdlib>
#include <limits>

#include "unitrain/engine/config/resume_config.h"
#include "unitrain/log/console.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/threads/cpu_budget.h"

namespace unitrain {

ThreadCount run_thread_count(int64_t configured, int64_t local_workers, const ResumePoint& resume,
                             ProcessGroup* group) {
  const int64_t world = group ? group->world_size() : 1;
  const bool same_layout = !resume.dir.empty() && resume.file.world_size == world;
  ThreadCount c =
      choose_thread_count(configured, std::getenv("OMP_NUM_THREADS"), local_workers,
                          read_cpu_limits().usable(), same_layout ? resume.file.threads : 0);
  if (!group) return c;
  // The smallest automatic count; a rank whose count was given takes part with "no limit".
  const double none = std::numeric_limits<double>::max();
  std::vector<torch::Tensor> t{torch::full({1}, c.automatic ? -double(c.threads) : -none,
                                           torch::TensorOptions(torch::kFloat64))};
  t[0] = t[0].to(group->device());
  group->all_reduce_max(t);
  const double smallest = -t[0].item<double>();
  if (c.automatic && smallest < double(c.threads)) {
    c.why += fmt::format("; {} on every rank, the fewest any rank's CPUs allow", int64_t(smallest));
    c.threads = int64_t(smallest);
  }
  return c;
}

std::unique_ptr<ThreadGovernor> govern_threads(int64_t configured, int64_t local_workers,
                                               const ResumePoint& resume, ProcessGroup* group) {
  ThreadCount count = run_thread_count(configured, local_workers, resume, group);
  if (!count.warning.empty()) log::warn(count.warning);
  return std::make_unique<ThreadGovernor>(std::move(count), local_workers);
}

}  // namespace unitrain
