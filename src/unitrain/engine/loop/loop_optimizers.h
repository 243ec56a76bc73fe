#pragma once
// LoopOptimizers: the optimizers one fit() steps — the Trainer's (automatic optimization) or
// those the module steps itself (manual: TrainModule::configure_optimizers) — each with the lr
// schedule it follows, the lr its last step used, and its checkpoint entry.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/core/config.h"
#include "unitrain/core/train_state.h"
#include "unitrain/engine/metric_map.h"
#include "unitrain/engine/step/lr_controller.h"
#include "unitrain/optim/optimizer.h"

namespace torch::optim {
class Optimizer;
}

namespace unitrain {

class OptimizerSetup;
class TrainCheckpoints;

struct TrainOptions;

/// ConfigError naming the key when a setting of a run whose module steps its own optimizers
/// needs the Trainer's: `accumulation` other than 1, train.clip_grad_norm, on_nonfinite: skip,
/// a precision with loss scaling or master weights, ZeRO (`zero`: the stage of a multi-process
/// run, 0 in one process).
void check_manual_optimization(const TrainOptions& train, int64_t accumulation, int64_t zero);
/// Manual optimization (`added` optimizers): warns, on rank 0, that the `optimizer` and
/// `scheduler` sections `config` sets (other than their defaults) are not used.
void warn_unused_trainer_sections(const Config& config, size_t added, int rank);

class LoopOptimizers {
 public:
  /// Automatic optimization: the Trainer's optimizer (held here, for the fit) and its schedule
  /// (null: constant lr).
  LoopOptimizers(OptimizerPtr optimizer, SchedulerPtr schedule, bool per_epoch);
  /// Manual optimization: the module's (non-empty) setup.
  LoopOptimizers(std::unique_ptr<OptimizerSetup> setup, bool per_epoch);
  ~LoopOptimizers();

  bool manual() const { return setup_ != nullptr; }
  /// The Trainer's optimizer, which the step runner steps (null: manual optimization).
  torch::optim::Optimizer* trainers() const { return trainers_.get(); }
  /// Each optimizer's name ("" for the Trainer's) and the optimizer.
  std::vector<std::pair<std::string, torch::optim::Optimizer*>> all() const;
  /// Manual: the module's optimizer `name`; ConfigError naming the known ones otherwise.
  torch::optim::Optimizer& named(const std::string& name) const;

  /// Sets every lr for where the run stands (after a start, a restore, a metric observed).
  void follow(const TrainState& state);
  /// Every lr times `scale` from the next follow() on (LrController::set_scale).
  void scale_lrs(double scale);
  /// Forgets every optimizer's state (a rollback, before the checkpoint's is restored).
  void clear_states();
  /// clear_states() at the end of a run whose optimizer steps parts that the next fit() cuts
  /// anew (ZeRO 3), remembering the bytes of the Trainer's optimizer's state first.
  void free_states();
  /// The bytes free_states() freed (-1: it did not run, or manual optimization).
  int64_t freed_state_bytes() const { return freed_state_bytes_; }
  /// A step ended: remember the lr it used (train/lr), then follow per-step schedules.
  void step_ended(const TrainState& state);
  /// An epoch ended: follow per-epoch schedules.
  void epoch_ended(const TrainState& state);
  /// Schedules that follow a validation metric (reduce_on_plateau) observe `val`.
  void observe_validation(const MetricMap& val, const TrainState& state);
  /// The lr the last step used: train/lr (automatic), train/lr-<name> (manual).
  void add_lrs(MetricMap& metrics) const;
  /// Remembers the current lrs as the last step's (at the start and after a restore).
  void remember_lrs();
  /// After a restore: every lr times `scale` (the rollbacks' train.divergence.lr_factor so far)
  /// set for where `state` stands — always after a rollback (`moved`: the run stands past the
  /// checkpoint it restored), after a resume only when scaled (the restored lrs are its own) —
  /// and remembered as the last step's.
  void restored(double scale, const TrainState& state, bool moved);
  /// Automatic: LrController::resume_note of the Trainer's optimizer; manual: "".
  std::string resume_note(const std::vector<ConfigChange>& changes,
                          const std::map<std::string, double>& last_train, int64_t next_step) const;
  /// Their schedules' checkpoint entries (automatic: the schedule's state in
  /// trainer_state.json), and manual: each optimizer's state and schedule in files of its own.
  /// The Trainer's optimizer's state is the loop's entry (ZeRO partitions).
  void add_entries(TrainCheckpoints& checkpoints, const TrainState& counters);

 private:
  struct Scheduled {
    std::string name;
    torch::optim::Optimizer* optimizer;
    std::unique_ptr<LrController> lr;
    double step_lr = 0;
  };
  OptimizerPtr trainers_;                  ///< automatic
  std::unique_ptr<OptimizerSetup> setup_;  ///< manual
  std::vector<Scheduled> list_;
  int64_t freed_state_bytes_ = -1;
};

}  // namespace unitrain
