#pragma once
// ChunkedNorm: distributed.reproducible's gradient norm (ParameterBlockSquares: blocks of 64
// elements squared in float64, added in order) over a model cut over processes: a parallel
// layer computing in chunks (distributed.reproducible_chunks) has its gradient taken chunk by
// chunk in the whole's chunk order, each process its own chunks, and a pipeline stage its own
// parameters' blocks; the others' blocks come from the other processes. The same double on any
// plan, one process included (where it is ReproducibleSync's own norm for a model without
// chunks).
#include <torch/types.h>

#include <memory>
#include <vector>

#include "unitrain/parallel/shard_ordered_reduce.h"

namespace torch::nn {
class Module;
}

namespace unitrain {

class ProcessGroup;

class ChunkedNorm {
 public:
  /// `module`'s parameters that train, in order; `group`: its tensor group (null: none),
  /// `stages` a pipeline's stages (null: none; a parameter without a gradient here is another
  /// stage's).
  ChunkedNorm(const torch::nn::Module& module, std::shared_ptr<ProcessGroup> group,
              std::shared_ptr<ProcessGroup> stages = nullptr);
  ~ChunkedNorm();
  /// The gradients' norm (a collective of the groups: one all-reduce of the blocks over each,
  /// each block held by one process).
  double norm();

 private:
  struct Param {
    torch::Tensor param;
    int64_t dim = 0, blocks = 1, chunks = 0;  ///< chunks 0: whole (counted by part 0)
    int64_t padded_chunk = 0;                 ///< a chunk's elements, to whole blocks
  };
  std::vector<Param> params_;
  std::shared_ptr<ProcessGroup> group_, stages_;
  int part_ = 0;
  ParameterBlockSquares squares_;
};

}  // namespace unitrain
