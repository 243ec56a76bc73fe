#pragma once
// TensorCut: a model whose tensors are cut over a tensor group (distributed.tensor_parallel)
// and whose units are cut into pipeline stages (distributed.pipeline_parallel) in checkpoints
// that hold every tensor whole, under the model's names and shapes — the same files whatever
// the plan: made whole (gathered) where they are written, cut where they are read.
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "unitrain/checkpoint/named_tensors.h"
#include "unitrain/checkpoint/optimizer_merge.h"
#include "unitrain/parallel/tensor_parallel.h"

namespace torch::optim {
class Optimizer;
}

namespace unitrain {

class PipelineStage;
class ProcessGroup;

struct TensorCut {
  std::shared_ptr<ProcessGroup> group;  ///< the tensor group (null: none)
  /// The cut parameters by name (tp::splits_of the model).
  std::unordered_map<std::string, tp::Split> splits;
  /// This process's tensor group gathers the whole tensors: the first replica's, whose first
  /// process writes the checkpoint (the others' would be the same).
  bool gathers = false;
  /// distributed.pipeline_parallel: this process's stage (null: none), and the parameters of
  /// the other stages' units by name (their memory freed) with the stage that holds each.
  std::shared_ptr<PipelineStage> stage;
  std::unordered_map<std::string, torch::Tensor> elsewhere;
  std::unordered_map<std::string, int> stage_of;
  /// This process's pipeline sends its stages' whole tensors to the writer (the last stage,
  /// process 0): the first replica's, at part 0 of the tensor groups.
  bool pipe_gathers = false;

  /// The cut tensors of `named` (by name) made whole: a collective of the group, every
  /// process in the same order; then (pipe_gathers) the writer's elsewhere tensors received
  /// from their stages, which send theirs.
  void make_whole(NamedTensors& named) const;
  /// The cut tensors of `named` (whole) replaced by this process's parts, the elsewhere ones by
  /// the (memoryless) parameters themselves.
  void cut(NamedTensors& named) const;
  /// Forgets the optimizer state of the elsewhere parameters (a whole file loaded).
  void drop_elsewhere_state(torch::optim::Optimizer& optimizer) const;
};

/// While it lives, the per-parameter state of `optimizer` for each parameter `params` names
/// (the model's, by name) that `cut` cuts holds the whole tensors (gathered over the group, so
/// a collective); the parts are put back when it goes. For the optimizer's checkpoint, which is
/// written from its state: the writer's group's (`cut.gathers`), or with `every_replica` (ZeRO
/// 1/2: each replica writes a partition) every group's. TrainError for an optimizer without a
/// registered state serializer.
class WholeOptimizerState {
 public:
  WholeOptimizerState(torch::optim::Optimizer& optimizer, const NamedTensors& params,
                      const TensorCut& cut, bool every_replica = false);
  ~WholeOptimizerState();
  WholeOptimizerState(const WholeOptimizerState&) = delete;
  WholeOptimizerState& operator=(const WholeOptimizerState&) = delete;

 private:
  struct Swap;
  torch::optim::Optimizer& optimizer_;
  std::vector<Swap> swaps_;
};

/// While it lives, the optimizer state of the parameters this process's pipeline stage holds
/// beside the stage that owns them (a tied head's embeddings on the last stage) is set aside:
/// the owner's partition of the checkpoint holds it, this one's not (a state two partitions
/// held would be refused when they are merged).
class BorrowedStateAside {
 public:
  BorrowedStateAside(torch::optim::Optimizer& optimizer, const TensorCut& cut);
  ~BorrowedStateAside();
  BorrowedStateAside(const BorrowedStateAside&) = delete;
  BorrowedStateAside& operator=(const BorrowedStateAside&) = delete;

 private:
  struct Swap;
  torch::optim::Optimizer& optimizer_;
  std::vector<Swap> aside_;
};

/// load_optimizer_state of `files` (written whole) into `optimizer`, whose parameters that
/// `cut` cuts (named by `params`) hold this process's parts: their state cut as they are.
void load_cut_optimizer_state(torch::optim::Optimizer& optimizer, const NamedTensors& params,
                              const TensorCut& cut, std::vector<OptimizerFile> files);

}  // namespace unitrain
