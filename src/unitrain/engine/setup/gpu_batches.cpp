#include "unitrain/engine/setup/gpu_batches.h"

#include <torch/torch.h>

#ifdef UNITRAIN_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace unitrain {

#ifdef UNITRAIN_CUDA

Batch to_gpu_on_side_stream(const Batch& batch, const torch::Device& device) {
  const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(device.index());
  const c10::cuda::CUDAStream copy = c10::cuda::getStreamFromPool(false, device.index());
  Batch out;
  {
    c10::cuda::CUDAStreamGuard on_copy(copy);
    out = batch.to(device, /*non_blocking=*/true);
  }
  at::cuda::CUDAEvent copied;
  copied.record(copy);
  copied.block(compute);
  for (const auto& entry : out) entry.second.record_stream(compute);
  return out;
}

#else

Batch to_gpu_on_side_stream(const Batch& batch, const torch::Device& device) {
  return batch.to(device, /*non_blocking=*/true);
}

#endif

}  // namespace unitrain
