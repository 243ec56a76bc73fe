#pragma once
// RunPlan: the sizes of a run — batches, windows, steps — computed once when fit() starts.
#include <cstdint>

#include "unitrain/core/train_state.h"
#include "unitrain/core/train_unit.h"
#include "unitrain/engine/config/train_options.h"
#include "unitrain/optim/scheduler.h"

namespace unitrain {

class Loader;

/// How one fit() is laid out over its data and processes. Each rank reads `batch_size` samples
/// per micro-batch; `accumulation` micro-batches make a window, which ends with one optimizer
/// step; the last window of an epoch may be shorter.
struct RunPlan {
  int rank = 0;   ///< this process's data-parallel replica (its rank without tensor parallelism)
  int world = 1;  ///< the replicas: the data is cut over them
  /// This process's rank of every process of the job, and their number: who writes the run's
  /// files (process 0) and whose files are whose. `rank` and `world` but under
  /// distributed.tensor_parallel, where the processes of a tensor group share a replica.
  int process = 0;
  int processes = 1;
  int64_t batch_size = 1;
  int64_t accumulation = 1;
  int64_t batches_per_epoch = 0;  ///< micro-batches of this rank per epoch
  int64_t steps_per_epoch = 0;
  int64_t samples_per_step = 0;  ///< over all ranks, a full window
  int64_t total_steps = 0;       ///< optimizer steps of the whole run (rounded up)
  int64_t epoch_size = 0;        ///< this rank's samples per epoch
  bool drop_last = false;

  /// `micro_shards` > 0 (distributed.reproducible): G / world micro-batches a window, every
  /// one full (the loader reads whole steps).
  static RunPlan make(const TrainOptions& options, const Loader& train, int rank, int world,
                      int64_t micro_shards = 0);
  /// distributed.reproducible's G, 0 when off.
  int64_t micro_shards = 0;
  /// Whether micro-batch `b` of an epoch ends its accumulation window.
  bool ends_window(int64_t b) const;
  /// Samples (of this rank) in the accumulation window that micro-batch `b` belongs to.
  int64_t window_samples(int64_t b) const;
  /// The micro-shard this rank runs at micro-step `micro_in_window` of a window
  /// (distributed.reproducible: micro_in_window x world + rank).
  int64_t shard_at(int64_t micro_in_window) const { return micro_in_window * world + rank; }
  /// What a schedule needs to know of the run; `per_epoch`: it steps once per epoch.
  ScheduleContext schedule_context(bool per_epoch, double base_lr) const;
};

// --- How far a run is, against a length or a period (Periods, the loop's end, a resume) ---

/// How far a run is in `unit`: completed epochs, optimizer steps or samples.
int64_t position(TrainUnit::Unit unit, const TrainState& state);
/// How many whole `every`s the run has behind it: position / count, and for a fraction of an
/// epoch, the batches read over the batches `every` spans (`batches_per_epoch` > 0 needed:
/// without it a fraction counts whole epochs only).
int64_t periods_behind(const TrainUnit& every, const TrainState& state, int64_t batches_per_epoch);
/// True when the run has trained for `length` (a fraction of an epoch: as periods_behind).
bool reached(const TrainUnit& length, const TrainState& state, int64_t batches_per_epoch = 0);

}  // namespace unitrain
