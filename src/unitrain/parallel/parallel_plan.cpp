#include "unitrain/parallel/parallel_plan.h"

#include <string>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {

int ParallelPlan::data_rank() const { return data ? data->rank() : 0; }
int ParallelPlan::data_size() const { return data ? data->world_size() : 1; }

ParallelPlan ParallelPlan::make(std::shared_ptr<ProcessGroup> world, int tensor) {
  ParallelPlan plan;
  plan.tensor = tensor;
  plan.world = world;
  if (tensor <= 1) {
    plan.data = std::move(world);
    return plan;
  }
  const int size = world ? world->world_size() : 1;
  UT_CHECK(size % tensor == 0 && size >= tensor, "distributed.tensor_parallel: ", tensor,
           " does not divide the job's ", size, " process", size == 1 ? "" : "es",
           ": the world is tensor_parallel x data-parallel replicas; start a multiple of ", tensor,
           " processes, or set distributed.tensor_parallel to a divisor of ", size);
  const int rank = world->rank(), first = rank / tensor * tensor;
  std::vector<int> mine;
  for (int r = first; r < first + tensor; ++r) mine.push_back(r);
  plan.tensor_group = world->subgroup("tensor-" + std::to_string(rank / tensor), mine);
  if (size > tensor) {
    std::vector<int> replicas;
    for (int r = rank % tensor; r < size; r += tensor) replicas.push_back(r);
    plan.data = world->subgroup("data-" + std::to_string(rank % tensor), replicas);
  }
  return plan;
}

}  // namespace unitrain
