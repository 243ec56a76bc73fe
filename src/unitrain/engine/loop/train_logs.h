#pragma once
// TrainLogs: a fit's log side with the state it carries across a resume — the training sums
// since the last log event, the last training and validation metrics, the run's logger (metrics
// files, trackers, the progress bar), its time — and its checkpoint entry.
#include <chrono>
#include <memory>
#include <string>

#include "unitrain/engine/checkpoint_entry.h"
#include "unitrain/engine/metric_map.h"
#include "unitrain/log/run_logger.h"
#include "unitrain/metrics/metric_accumulator.h"
#include "unitrain/parallel/shard_ordered_metrics.h"

namespace unitrain {

class NonfiniteWatch;
class ProcessGroup;

class TrainLogs : public CheckpointEntry {
 public:
  /// `group`: the ranks whose training sums a log event adds up (null for one process).
  TrainLogs(ProcessGroup* group, int rank);

  /// The step's non-finite watch, which every log event settles first (nothing is logged of a
  /// run whose loss went non-finite since the last event): from the step's start on.
  void settle_with(NonfiniteWatch& watch) { watch_ = &watch; }

  /// The training sums stay on their device until a log event reads them, once (the runner
  /// defers its reads).
  void defer_reads() { train_sums_ = MetricAccumulator(MetricAccumulator::Reads::Deferred); }
  /// distributed.reproducible: each micro-batch's loss and metrics are kept as they are and
  /// added in the global order of the micro-shards at each log event and save (the same sums
  /// on every rank and every world size, which every rank then holds); add_mean()'s values are
  /// summed over ranks as before.
  void order_by_shards();
  /// Once the run folder is ready: its logger (a resume's cut back to its checkpoint).
  void open(std::unique_ptr<RunLogger> logger) { logger_ = std::move(logger); }
  RunLogger& logger() { return *logger_; }
  const RunLogger& logger() const { return *logger_; }
  /// The step's late non-finite check (a log, a validation, a save, the end go through it).
  void settle() const;
  /// The events in the run's metrics files: the logger's, or before open() a resume's.
  int64_t events() const;

  // --- Training sums --------------------------------------------------------------------
  /// A micro-batch's values: its loss, weighted by what it averages over (`counted` samples or
  /// target tokens), and its metrics, by its `samples`.
  void add_batch(const MetricValue& loss, int64_t counted,
                 const std::map<std::string, MetricValue>& metrics, int64_t samples);
  /// Whether anything was added since the last log event.
  bool has_train_sums() const {
    return !train_sums_.empty() || !means_.empty() || (ordered_ && !ordered_->empty());
  }
  /// A value for the next log event's means (Trainer::log_mean, run().log).
  void add_mean(const std::string& name, const at::Tensor& value);
  /// The training means since the last log event, over every rank, "train/<name>", and the
  /// sums cleared; empty when nothing was added (after settle(): TrainError of a run whose
  /// loss went non-finite). A collective when data-parallel.
  MetricMap take_train_means();

  // --- Log events ------------------------------------------------------------------------
  /// Logs `event` (its time: elapsed()); its metrics become the last training ones.
  void log_train(LogEvent event);
  /// Logs a validation pass's event; its metrics become the last validation ones, at `step`.
  void log_val(LogEvent event, int64_t step);
  /// Whether validation ran at `step` already (a pass per step at most).
  bool validated_at(int64_t step) const { return last_val_step_ == step; }
  /// Seconds trained, over every segment of the run.
  double elapsed() const;
  /// Seconds trained before this segment (a resume's checkpoint's).
  double seconds_before() const { return time_offset_; }
  const MetricMap& last_train() const { return last_train_; }
  const MetricMap& last_val() const { return last_val_; }
  /// The checkpoint this fit resumed from ("" for a fresh one).
  const std::string& resumed_from() const { return resumed_from_; }
  /// After a rollback restored a checkpoint (and this entry with it): the logs go back to the
  /// checkpoint's events as a resume's do, the rollback stays as `event`, and the time and the
  /// resumed-from folder go on as they were (`seconds`, `resumed_from`: before the restore).
  void rolled_back(const LogEvent& event, double seconds, const std::string& resumed_from);

  // The checkpoint entry: trainer_state.json's section "logs" — the sums (summed over ranks:
  // rank 0 carries them on a resume; ordered ones every rank, add_mean()'s beside them as
  // train_means), the log position, the time — and the last metrics.
  void save(CheckpointWrite& out) override;
  void restore(const CheckpointRead& in) override;

 private:
  using Clock = std::chrono::steady_clock;
  ProcessGroup* group_;
  int rank_;
  NonfiniteWatch* watch_ = nullptr;
  std::unique_ptr<RunLogger> logger_;  ///< from open() on
  MetricAccumulator train_sums_;
  /// order_by_shards(): the micro-batches not added yet, and add_mean()'s values (train_sums_
  /// then holds the ordered sums, the same on every rank).
  std::unique_ptr<ShardOrderedMetrics> ordered_;
  MetricAccumulator means_;
  /// Folds ordered_ into train_sums_ (a collective); nothing without it.
  void fold();
  MetricMap last_train_, last_val_;
  int64_t last_val_step_ = -1;
  Clock::time_point start_time_ = Clock::now();
  double time_offset_ = 0;           ///< seconds of training before a resume
  int64_t restored_log_events_ = 0;  ///< events logged before the checkpoint last restored
  std::string resumed_from_;
};

}  // namespace unitrain
