#pragma once
// LoopData: a fit's data side — the training loader (each rank its shard, padded to equal
// lengths) and its running epoch, the validation loader (disjoint shards), train.loss_average:
// tokens's count of each window's target tokens, and the time spent waiting for batches.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/batch.h"
#include "unitrain/data/dataset.h"
#include "unitrain/data/loader.h"

namespace unitrain {

class ProcessGroup;
class WindowTokens;
struct RunPlan;
struct RunSettings;

class LoopData {
 public:
  /// The loaders of `train` and `val` (null: none) as the settings say, batches pinned for a
  /// GPU (`cuda`), a resumed run's shuffle `order`; each rank's shard when `group` is given.
  LoopData(DatasetPtr train, DatasetPtr val, const RunSettings& settings, bool cuda,
           ShuffleAlgorithm order, ProcessGroup* group);
  ~LoopData();

  const Loader& train() const { return train_; }
  /// The training data's class names (empty: none), which checkpoints hold in classes.json.
  const std::vector<std::string>& class_names() const { return class_names_; }
  /// The validation loader, or null.
  const Loader* val() const { return val_.get(); }
  /// Once the plan is made: with train.loss_average: tokens, each window's tokens are counted.
  void plan(const RunSettings& settings, const RunPlan& plan, ProcessGroup* group);

  /// Whether an epoch's batches are being read (open_epoch() was called since it closed).
  bool epoch_open() const { return epoch_ != nullptr; }
  /// Starts reading epoch `epoch` at its micro-batch `b`.
  void open_epoch(int64_t epoch, int64_t b);
  /// The open epoch's next micro-batch, `b` (with tokens counted, the whole window is read at
  /// its start); nullopt at the epoch's end.
  std::optional<Batch> next(int64_t epoch, int64_t b);
  /// The running epoch closed (its end, a rollback): its wait counted, windows read ahead
  /// forgotten.
  void close_epoch();
  /// A micro-batch's loss weight in its window of `window_samples` on each of `world` ranks:
  /// its share of the window's samples, or (tokens counted) of its target tokens on all ranks.
  double weight(const Batch& batch, int64_t window_samples, int64_t world) const;
  /// What the batch's loss is a mean over: its samples, or its target tokens.
  int64_t counted(const Batch& batch) const;
  /// Seconds spent waiting for training batches, in the epochs closed so far.
  double wait_seconds() const { return wait_seconds_; }

 private:
  std::vector<std::string> class_names_;
  Loader train_;
  std::unique_ptr<Loader> val_;
  std::unique_ptr<EpochIterator> epoch_;  ///< the running epoch's
  std::unique_ptr<WindowTokens> tokens_;  ///< train.loss_average: tokens (else null)
  bool reproducible_ = false;             ///< distributed.reproducible: read by whole batches
  double wait_seconds_ = 0;
};

}  // namespace unitrain
