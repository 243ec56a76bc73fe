#pragma once
// WindowTokens: train.loss_average: tokens — each micro-batch's loss weighted by its share of the
// target tokens of its accumulation window on all ranks.
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "unitrain/core/batch.h"
#include "unitrain/data/loader.h"

namespace unitrain {

class ProcessGroup;
struct RunPlan;

/// Target tokens of `batch`: entries of batch key `key` other than -100 (the ignore index);
/// ConfigError naming train.token_key when the batch has no such key.
int64_t target_tokens(const Batch& batch, const std::string& key);

/// Reads each accumulation window's micro-batches ahead of their forward, counts their target
/// tokens (entries of batch key `key` other than -100, the ignore index), sums the count over
/// the ranks (one number, once per window) and gives each micro-batch the weight
/// count / window count: the window's update is then the gradient of the mean loss over every
/// target token of the window on every rank, as one batch of them all would give, whatever the
/// tokens per micro-batch and per rank (cross_entropy's mean over its counted tokens, times
/// that weight, is the micro-batch's share of the sum). A run resumed inside a window counts
/// the micro-batches it already consumed by reading them again.
class WindowTokens {
 public:
  /// `reread(b)`: an iterator of this epoch from micro-batch b (for a resume inside a window).
  WindowTokens(std::string key, ProcessGroup* group, const RunPlan& plan);

  /// The micro-batch `b` of the epoch: at a window's start, the whole window is read from
  /// `source` first (and counted); then from what was read. nullopt at the epoch's end.
  std::optional<Batch> next(EpochIterator& source, int64_t b,
                            const std::function<std::unique_ptr<EpochIterator>(int64_t)>& reread);
  /// The weight of `batch`'s loss in its window (0 when the window has no target token).
  double weight(const Batch& batch) const;
  /// Target tokens of `batch`; ConfigError naming train.token_key when it has no such key.
  int64_t count(const Batch& batch) const;
  /// Forgets what was read ahead (the epoch's iterator was closed: a rollback, an epoch's end).
  void clear();

 private:
  void read_window(EpochIterator& source, int64_t b,
                   const std::function<std::unique_ptr<EpochIterator>(int64_t)>& reread);
  std::string key_;
  ProcessGroup* group_;
  const RunPlan& plan_;
  std::deque<Batch> ahead_;
  int64_t window_end_ = -1;  ///< the last micro-batch of the window counted; -1 = none
  double total_ = 0;         ///< its target tokens, all ranks
};

}  // namespace unitrain
