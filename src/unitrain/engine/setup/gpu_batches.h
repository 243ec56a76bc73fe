#pragma once
// Batches onto a GPU on a copy stream of their own, so that the copy of the next batch runs
// while the current step's kernels do.
#include <torch/types.h>

#include "unitrain/core/batch.h"

namespace unitrain {

/// `batch` copied to the GPU `device` on a side stream (from pinned host memory: without
/// blocking the host), the current stream made to wait for the copy (an event: no host wait)
/// and the copies' memory marked as used there, so the caching allocator keeps it until the
/// step is done with it. Without CUDA in this build: an ordinary copy.
Batch to_gpu_on_side_stream(const Batch& batch, const torch::Device& device);

}  // namespace unitrain
