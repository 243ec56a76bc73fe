#include "unitrain/parallel/parallel_plan.h"

#include <string>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {

int ParallelPlan::data_rank() const { return data ? data->rank() : 0; }
int ParallelPlan::data_size() const { return data ? data->world_size() : 1; }

namespace {

/// What the world must be a multiple of, said by the keys that ask for it.
std::string plan_words(int tensor, int pipeline) {
  if (pipeline == 1) return "distributed.tensor_parallel: " + std::to_string(tensor);
  if (tensor == 1) return "distributed.pipeline_parallel: " + std::to_string(pipeline);
  return "distributed.tensor_parallel x pipeline_parallel: " + std::to_string(tensor) + " x " +
         std::to_string(pipeline) + " = " + std::to_string(tensor * pipeline);
}

}  // namespace

ParallelPlan ParallelPlan::make(std::shared_ptr<ProcessGroup> world, int tensor, int pipeline,
                                bool zero) {
  ParallelPlan plan;
  plan.tensor = tensor;
  plan.pipeline = pipeline;
  plan.world = world;
  if (tensor <= 1 && pipeline <= 1) {
    plan.data = std::move(world);
    return plan;
  }
  const int size = world ? world->world_size() : 1, model = tensor * pipeline;
  const std::string words = plan_words(tensor, pipeline);
  UT_CHECK(size % model == 0 && size >= model, words, " does not divide the job's ", size,
           " process", size == 1 ? "" : "es", ": the world is ",
           pipeline == 1 ? "tensor_parallel"
           : tensor == 1 ? "pipeline_parallel"
                         : "tensor_parallel x pipeline_parallel",
           " x data-parallel replicas; start a multiple of ", model,
           " processes, or set the plan to a divisor of ", size);
  const int rank = world->rank();
  const int part = rank % tensor, stage = rank / tensor % pipeline, replica = rank / model;
  if (tensor > 1) {
    std::vector<int> mine;
    for (int t = 0; t < tensor; ++t) mine.push_back(rank - part + t);
    plan.tensor_group = world->subgroup("tensor-" + std::to_string(rank / tensor), mine);
  }
  if (pipeline > 1) {
    std::vector<int> stages;
    for (int s = 0; s < pipeline; ++s) stages.push_back(replica * model + s * tensor + part);
    plan.pipe =
        world->subgroup("pipe-" + std::to_string(replica) + "-" + std::to_string(part), stages);
  }
  if (size > model) {
    std::vector<int> replicas;
    for (int r = rank % model; r < size; r += model) replicas.push_back(r);
    plan.data = world->subgroup("data-" + std::to_string(stage * tensor + part), replicas);
  }
  if (zero && pipeline > 1 && size > model && part == 0) {
    std::vector<int> writers;  // in rank order: by replica, then pipe rank
    for (int r = 0; r < size; r += tensor) writers.push_back(r);
    plan.partitions = world->subgroup("partitions", writers);
  }
  return plan;
}

}  // namespace unitrain
