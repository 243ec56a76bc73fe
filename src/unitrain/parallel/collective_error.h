#pragma once
// The failure of a collective across the processes (a lost or stopped peer, a timeout): a
// TrainError of its own kind, so that code which wraps errors from the user's module (ZeRO 3's
// collectives run inside its forward and backward) tells it from the module's own failures.
#include "unitrain/core/error.h"

namespace unitrain {

/// "rank 1: reduce_scatter #18 (step 3, backward) across 3 processes failed after 0.1 s ...:
/// did not arrive: rank 2: ...", as ProcessGroup writes it. Exit code 1, as any TrainError.
class CollectiveError : public TrainError {
 public:
  using TrainError::TrainError;
};

}  // namespace unitrain
