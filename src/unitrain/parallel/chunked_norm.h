#pragma once
// ChunkedNorm: distributed.reproducible's gradient norm (ParameterBlockSquares: blocks of 64
// elements squared in float64, added in order) over a model whose parallel layers compute in
// chunks (distributed.reproducible_chunks): a cut parameter's gradient is taken chunk by chunk
// in the whole's chunk order, each process its own chunks, so the norm is the same double on
// any tensor group dividing the chunks, one process included.
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
  /// `module`'s parameters that train, in order; `group`: its tensor group (null: one process).
  ChunkedNorm(const torch::nn::Module& module, std::shared_ptr<ProcessGroup> group);
  ~ChunkedNorm();
  /// The gradients' norm (a collective of the group: one all-reduce of the blocks, each
  /// block held by one process).
  double norm();

 private:
  struct Param {
    torch::Tensor param;
    int64_t dim = 0, blocks = 1, chunks = 0;  ///< chunks 0: whole (counted by part 0)
    int64_t padded_chunk = 0;                 ///< a chunk's elements, to whole blocks
  };
  std::vector<Param> params_;
  std::shared_ptr<ProcessGroup> group_;
  int part_ = 0;
  ParameterBlockSquares squares_;
};

}  // namespace unitrain
