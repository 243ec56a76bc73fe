#pragma once
// Trainer: the training loop. `Trainer(config).fit(module, train, val)`.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/config.h"
#include "unitrain/core/run_position.h"
#include "unitrain/core/train_module.h"
#include "unitrain/core/train_state.h"
#include "unitrain/data/dataset.h"
#include "unitrain/engine/callback.h"
#include "unitrain/engine/callback_list.h"
#include "unitrain/engine/config/train_options.h"
#include "unitrain/engine/fit_result.h"
#include "unitrain/engine/loop/evaluator.h"
#include "unitrain/engine/loop/run_decisions.h"
#include "unitrain/engine/setup/fit_device.h"
#include "unitrain/optim/optimizer.h"
#include "unitrain/optim/scheduler.h"
#include "unitrain/parallel/parallel_plan.h"

namespace unitrain {

class CheckpointEntry;
class LoopOptimizers;
struct RunPlan;
class Precision;
class ProcessGroup;
class RunDirLock;
struct DistEnv;
class RunLogger;
class TrainLoop;
struct ResumePoint;
struct RunSettings;

/// Trains a TrainModule as the config says (`optimizer`, `scheduler`, `train`, `data.loader`,
/// `log`, `seed`, `run_dir`). Construct the Trainer before the module: the constructor seeds
/// torch's generator with `seed`, so the module's initial weights are reproducible.
/// Subclass it to build the optimizer or schedule in code; add Callbacks to observe or stop.
/// Checkpoints (`checkpoint`) go to run_dir/checkpoints; fit() resumes from one as
/// `checkpoint.resume` says, exactly where it was saved. SIGINT and the checkpoint.on_signal
/// signals (SIGTERM, SIGUSR1) during fit() end it after the current micro-batch with a
/// checkpoint (FitResult::signal, FitResult::exit_code).
/// Throws ConfigError for bad setup (before any training step) and TrainError for failures
/// during training (non-finite loss, I/O).
class Trainer {
 public:
  /// `config` may be raw (it is resolved here) or already resolved.
  explicit Trainer(const Config& config);
  virtual ~Trainer();

  /// Callbacks run in the order added; `early_stopping` (when its metric is set) comes first.
  void add_callback(std::shared_ptr<Callback> callback);
  /// State of the program's own that checkpoints must hold (a second optimizer its module steps,
  /// a data cursor, a buffer): saved after the built-in entries in every checkpoint and restored
  /// on resume (checkpoint_entry.h). Its file names must differ from every other entry's.
  void add_checkpoint_entry(std::shared_ptr<CheckpointEntry> entry);
  FitResult fit(TrainModule& module, DatasetPtr train, DatasetPtr val = nullptr);
  /// One pass of validation_step (or test_step) over `data`; metrics keyed `<prefix>/<name>`.
  MetricMap evaluate(TrainModule& module, DatasetPtr data, EvalSplit split,
                     const std::string& prefix);
  /// The weights validation used, from checkpoint folder `dir` (whose model.pt `module` holds):
  /// a callback that validates with weights of its own (ema) puts them in. Returns the name of
  /// the callback that did, or "" (the trained weights are the validated ones).
  std::string load_validated_weights(TrainModule& module, const std::string& dir);
  /// Evaluates `data` as the test split after fit(): metrics `test/<name>`, logged to the
  /// run's trackers (console, metrics.jsonl/csv) at the run's last step and written to
  /// run_dir/results/test.json and results/summary.json (rank 0).
  MetricMap test(TrainModule& module, DatasetPtr data);

  const Config& config() const { return config_; }
  const TrainOptions& options() const;
  /// How the running (or last) fit() spread the model over the processes: its groups, tensor
  /// and pipeline sizes (one process: all 1).
  const ParallelPlan& parallel_plan() const { return parallel_; }
  /// The run's counters: the running fit()'s, or after it the last fit's (zeros before any).
  TrainState state() const;
  /// A stop was decided (request_stop): in one process at once, in data-parallel runs once the
  /// ranks agreed. Stays true after the fit it ended, until the next fit() starts.
  bool stop_decided() const { return decisions_.stop_decided(); }
  const std::string& run_dir() const;
  /// Ends training (callbacks call this): in one process after the current optimizer step. In
  /// data-parallel runs the ranks agree: a stop asked for on any rank ends the run on every
  /// rank, after the validation pass it was asked in, or else after the next optimizer step.
  /// The run is finished: running it again trains nothing.
  void request_stop();
  /// Ends training with a checkpoint that a later run resumes from (what a time budget needs);
  /// `reason` goes to the log and results/summary.json. Agreed across ranks like a stop.
  void request_pause(const std::string& reason);
  /// Adds `value` to the next training log event as `train/<name>`: the mean of the values
  /// added (on every rank) since the last log. Checkpoints save the running sums.
  void log_mean(const std::string& name, double value);
  /// log_mean of a scalar tensor, summed on its device and read only when the log event needs
  /// it (no wait for a GPU here).
  void log_mean(const std::string& name, const torch::Tensor& value);
  /// The optimizer of the current fit() (null outside fit, and when the module steps its own).
  torch::optim::Optimizer* optimizer() const;
  /// The optimizers the current fit() steps, by name: the Trainer's (named "") or those the
  /// module steps itself (TrainModule::configure_optimizers). Empty outside fit.
  std::vector<std::pair<std::string, torch::optim::Optimizer*>> optimizers() const;
  /// The module of the current fit() (null outside fit).
  TrainModule* module() const { return module_; }
  /// This process's rank and the number of processes of the current fit() (0 and 1 outside).
  int rank() const;
  int world_size() const;
  /// Writes a message to the console and train.log.
  void print(const std::string& message) const;
  /// This process's tensor group under distributed.tensor_parallel (null when it is 1, or in
  /// one process), for building a model whose layers are cut over it
  /// (parallel/tensor_parallel.h) before fit(): the job's processes join now, and the next
  /// fit() runs with them. ConfigError naming the key when it does not divide the processes.
  std::shared_ptr<ProcessGroup> tensor_group();

 protected:
  /// The optimizer for `module`; the default builds the `optimizer` section.
  virtual OptimizerPtr configure_optimizer(TrainModule& module);
  /// The lr schedule; the default builds the `scheduler` section (null = constant lr).
  virtual SchedulerPtr configure_scheduler(const ScheduleContext& context);
  /// How steps compute (autocast, loss scaling, master weights); the default follows
  /// train.precision and train.loss_scaler. Called once per fit(), before the optimizer is
  /// built: bf16-true casts `weights` here. (E.g. Precision::loss_scaling_only for a model that
  /// runs its own float16 forward.)
  virtual std::unique_ptr<Precision> configure_precision(torch::nn::Module& weights);

 private:
  void prepare_run_dir(bool resuming);
  /// ConfigError, before anything is read or written, when checkpoint.best.metric or
  /// early_stopping.metric names a validation metric and fit() got no validation data.
  void check_monitored_metrics(bool has_val) const;
  /// The processes (null group: one process; on a GPU `device` they talk through NCCL when
  /// the backend is auto), with a resume's checks against this run's processes and config.
  std::shared_ptr<ProcessGroup> join_group(const DistEnv& env, const torch::Device& device);
  /// The job's processes and distributed.tensor_parallel's groups: joined by tensor_group()
  /// before a fit(), else by the fit (its device set up first).
  struct Joined {
    FitDevice device;
    ParallelPlan plan;
  };
  Joined join(const DistEnv& env);
  /// The run folder, once nothing refused the run: rank 0 prepares it (an earlier run's files
  /// to history/ unless `resuming`) and writes `classes`; then every rank logs there.
  void prepare_run_folder(ProcessGroup* group, bool resuming,
                          const std::vector<std::string>& classes);
  /// fit() without its on_exception funnel.
  FitResult run_fit(TrainModule& module, DatasetPtr train, DatasetPtr val);
  /// The parts of fit() before its loop is built, none of which writes in the run folder: its
  /// lock, where to resume (into `resume`), precision checks, the processes (null group: one
  /// process), the module on its device, precision, the seed, the decisions.
  std::shared_ptr<ProcessGroup> prepare_fit(const DistEnv& env, TrainModule& module,
                                            ResumePoint& resume);
  /// The optimizers of the fit(): the module's own (TrainModule::configure_optimizers), or the
  /// Trainer's (configure_optimizer, configure_scheduler).
  std::unique_ptr<LoopOptimizers> configure_loop_optimizers(TrainModule& module,
                                                            const RunPlan& plan, bool distributed);
  /// The loop (TrainLoop::run) under the signals the run stops on and the stall watchdog.
  void train_until_finished(TrainLoop& loop);
  Config config_;
  std::unique_ptr<const RunSettings> settings_;  ///< fit_resume_to_world may replace them
  bool run_dir_ready_ = false;
  /// run_dir's lock, held from the first fit() of the process that writes the run folder
  /// (rank 0) until this Trainer is destroyed.
  std::unique_ptr<RunDirLock> run_dir_lock_;
  /// What test() needs of the last fit(): its result, this process's rank, where its logs
  /// stand (test() logs after them).
  struct LastFit {
    FitResult result;
    int rank = 0;
    int64_t log_events = -1;
  };
  LastFit last_fit_;
  CallbackList callbacks_{*this};
  std::vector<std::shared_ptr<CheckpointEntry>> checkpoint_entries_;  ///< add_checkpoint_entry's
  /// train.precision as set up by the last fit() (its test() and evaluate() use it), or null.
  std::unique_ptr<Precision> precision_;
  TrainModule* module_ = nullptr;
  /// The running fit()'s loop, which owns the live counters (null outside fit(); a failed
  /// fit() records them before it goes).
  std::unique_ptr<TrainLoop> loop_;
  /// Stop, pause, signals: what callbacks and signals ask for, and what the ranks agreed.
  RunDecisions decisions_;
  /// Where the training thread is (step, phase): the stall watchdog and the group's flight
  /// recorder read it.
  RunPosition position_;
  std::optional<Joined> joined_early_;  ///< tensor_group()'s, until the next fit() takes it
  ParallelPlan parallel_;               ///< the running (or last) fit()'s
};

}  // namespace unitrain
