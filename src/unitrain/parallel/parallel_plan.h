#pragma once
// ParallelPlan: the job's processes as data-parallel replicas of a model cut over a pipeline of
// stages (distributed.pipeline_parallel) of tensor groups (distributed.tensor_parallel), the
// tensor group innermost: rank = (replica * P + (P - 1 - stage)) * T + part, the last stage
// first (process 0 holds the loss: PipelineStage). Ranks [k T, (k + 1) T) compute one stage
// together, the P stages of a replica at the same part (`pipe`, by rank: the last stage is 0)
// pass activations to one another, and the processes at the same stage and part of every
// replica are one data-parallel group.
#include <memory>

namespace unitrain {

class PipelineStage;
class ProcessGroup;

struct ParallelPlan {
  /// Every process of the job (null for one process): decisions, barriers and the run's files.
  std::shared_ptr<ProcessGroup> world;
  /// The data-parallel replicas this process belongs to (null when there is one): its data
  /// shard, its gradient reduction and its metrics. The world itself when tensor and pipeline
  /// are 1.
  std::shared_ptr<ProcessGroup> data;
  /// The processes this one computes its stage with (null when tensor is 1).
  std::shared_ptr<ProcessGroup> tensor_group;
  /// The stages of this process's replica at its part, by stage (null when pipeline is 1).
  std::shared_ptr<ProcessGroup> pipe;
  /// This process's stage once the model's units are cut (null when pipeline is 1).
  std::shared_ptr<PipelineStage> stage;
  /// distributed.zero with a pipeline and replicas of it: part 0 of every stage of every
  /// replica, in rank order (by replica, then pipe rank; process 0 first): each writes its
  /// replica's partition of its stage's optimizer state, partition replica x P + pipe rank
  /// (null otherwise, and on the other parts).
  std::shared_ptr<ProcessGroup> partitions;
  int tensor = 1;    ///< T
  int pipeline = 1;  ///< P

  /// This process's replica, and how many there are.
  int data_rank() const;
  int data_size() const;
  /// Whether the model is cut over processes (T or P above 1).
  bool cuts_model() const { return tensor > 1 || pipeline > 1; }

  /// The plan of `world` (null: one process) for distributed.tensor_parallel `tensor` and
  /// distributed.pipeline_parallel `pipeline`: its groups made (a collective of each's
  /// members), `partitions` too when `zero` (distributed.zero above 0). ConfigError naming the
  /// keys when tensor x pipeline does not divide the world's processes.
  static ParallelPlan make(std::shared_ptr<ProcessGroup> world, int tensor, int pipeline = 1,
                           bool zero = false);
};

}  // namespace unitrain
