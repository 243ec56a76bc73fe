#pragma once
// ParallelPlan: the job's processes as data-parallel replicas of a tensor group
// (distributed.tensor_parallel), the tensor group innermost: ranks [k T, (k + 1) T) compute one
// model together, and the processes at the same place of every tensor group are one
// data-parallel group.
#include <memory>

namespace unitrain {

class ProcessGroup;

struct ParallelPlan {
  /// Every process of the job (null for one process): decisions, barriers and the run's files.
  std::shared_ptr<ProcessGroup> world;
  /// The data-parallel replicas this process belongs to (null when there is one): its data
  /// shard, its gradient reduction and its metrics. The world itself when tensor is 1.
  std::shared_ptr<ProcessGroup> data;
  /// The processes this one computes the model with (null when tensor is 1).
  std::shared_ptr<ProcessGroup> tensor_group;
  int tensor = 1;  ///< T

  /// This process's replica, and how many there are.
  int data_rank() const;
  int data_size() const;

  /// The plan of `world` (null: one process) for distributed.tensor_parallel `tensor`: its
  /// tensor and data groups made (a collective of each's members). ConfigError naming the key
  /// when `tensor` does not divide the world's processes.
  static ParallelPlan make(std::shared_ptr<ProcessGroup> world, int tensor);
};

}  // namespace unitrain
