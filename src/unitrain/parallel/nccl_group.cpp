// Compiled only with UNITRAIN_CUDA (CMakeLists.txt); tests/cuda_syntax_check.sh checks it
// compiles on machines without a GPU.
#include "unitrain/parallel/nccl_group.h"

#include <c10/cuda/CUDAFunctions.h>

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

namespace unitrain {

c10::intrusive_ptr<C10dGroup> make_nccl_group(const c10::intrusive_ptr<c10d::Store>& store,
                                              int rank, int world_size,
                                              std::chrono::milliseconds timeout,
                                              c10::DeviceIndex gpu) {
  c10::cuda::set_device(gpu);
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, options);
}

}  // namespace unitrain
