#pragma once
// The NCCL process group, built only where LibTorch has CUDA (UNITRAIN_CUDA): this machine has
// no GPU, so a test compiles it against CUDA's and c10d's headers instead of running it.
#include <c10/core/Device.h>

#include <chrono>

#include "unitrain/parallel/c10d_fwd.h"

namespace unitrain {

/// A ProcessGroupNCCL over `store`, one GPU per rank: `gpu` becomes this process's current
/// CUDA device first (NCCL's barrier and communicators use it).
c10::intrusive_ptr<C10dGroup> make_nccl_group(const c10::intrusive_ptr<c10d::Store>& store,
                                              int rank, int world_size,
                                              std::chrono::milliseconds timeout,
                                              c10::DeviceIndex gpu);

}  // namespace unitrain
