#pragma once
// TrainState: the counters of a run, a plain struct that callbacks observe and checkpoints save.
// The loop of a fit is their one writer; whether the run was asked to stop is not a counter
// (Trainer::stop_decided).
#include <cstdint>

namespace unitrain {

struct TrainState {
  int64_t epoch = 0;            ///< completed epochs
  int64_t step = 0;             ///< optimizer steps taken (skipped non-finite steps included)
  int64_t samples = 0;          ///< training samples consumed
  int64_t batch_in_epoch = 0;   ///< micro-batches consumed in the current epoch
  int64_t micro_in_window = 0;  ///< micro-batches in the current accumulation window
  int64_t skipped_steps = 0;    ///< updates skipped for a non-finite loss or gradient
};

}  // namespace unitrain
