#pragma once
// Forward declarations of c10d's classes, so that headers need not include c10d's; and
// C10dGroup, the class unitrain's collectives call, whichever LibTorch it is built against.
#include <c10/util/intrusive_ptr.h>
#include <torch/version.h>

namespace c10d {
class Backend;
class ProcessGroup;
class Store;
class Work;
}  // namespace c10d

namespace unitrain {

/// What Gloo's and NCCL's process groups derive from, with the collectives (allreduce,
/// broadcast, reduce, allgather, barrier): c10d::ProcessGroup in LibTorch 1.x; 2.x splits that
/// into ProcessGroup (a front that dispatches by device) and Backend (the implementations).
#if TORCH_VERSION_MAJOR >= 2
using C10dGroup = c10d::Backend;
#else
using C10dGroup = c10d::ProcessGroup;
#endif

}  // namespace unitrain
