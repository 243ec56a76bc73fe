#include "unitrain/engine/trainer.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>

#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/core/atomic_file.h"
#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/save_signals.h"
#include "unitrain/engine/checkpoints/checkpoint_entries.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/engine/loop/loop_optimizers.h"
#include "unitrain/engine/loop/stall_watchdog.h"
#include "unitrain/engine/loop/stop_signal.h"
#include "unitrain/engine/loop/train_loop.h"
#include "unitrain/engine/results/fit_conclusion.h"
#include "unitrain/engine/results/summary_file.h"
#include "unitrain/engine/setup/fit_device.h"
#include "unitrain/engine/setup/pipeline_cut.h"
#include "unitrain/engine/setup/run_callbacks.h"
#include "unitrain/engine/setup/run_dir_lock.h"
#include "unitrain/engine/setup/run_folder.h"
#include "unitrain/engine/setup/run_resume.h"
#include "unitrain/engine/setup/run_threads.h"
#include "unitrain/engine/setup/world_change.h"
#include "unitrain/log/console.h"
#include "unitrain/log/console_tracker.h"
#include "unitrain/log/run_logger.h"
#include "unitrain/optim/optimizer_setup.h"
#include "unitrain/parallel/dist_env.h"
#include "unitrain/parallel/distributed_options.h"
#include "unitrain/parallel/tensor_parallel.h"
#include "unitrain/threads/cpu_budget.h"

namespace unitrain {

Trainer::Trainer(const Config& config)
    : config_(resolve_program_config(config)),
      settings_(std::make_unique<RunSettings>(program_settings(config_))) {
  startup_load_probe();  // other programs' CPU load, from here to fit() (train.threads: auto)
  torch::manual_seed(settings_->seed);
  for (CallbackPtr& c : build_callbacks(config_)) callbacks_.add(std::move(c));
}

const TrainOptions& Trainer::options() const { return settings_->train; }

const std::string& Trainer::run_dir() const { return settings_->run_dir; }

Trainer::~Trainer() = default;

void Trainer::add_callback(std::shared_ptr<Callback> callback) {
  callbacks_.add(std::move(callback));
}

std::string Trainer::load_validated_weights(TrainModule& module, const std::string& dir) {
  const CheckpointEntries entries = read_callback_entries(dir);
  for (const auto& c : callbacks_.all()) {
    if (c->on_load_validated_weights(*this, module.weights(), entries)) return c->name();
  }
  return "";
}

void Trainer::add_checkpoint_entry(std::shared_ptr<CheckpointEntry> entry) {
  UT_CHECK(entry != nullptr, "add_checkpoint_entry: the entry is null");
  checkpoint_entries_.push_back(std::move(entry));
}

int Trainer::rank() const { return loop_ ? loop_->plan().process : last_fit_.rank; }

int Trainer::world_size() const { return loop_ ? loop_->plan().processes : 1; }

TrainState Trainer::state() const { return loop_ ? loop_->counters() : last_fit_.result.state; }

void Trainer::request_stop() { decisions_.request_stop(); }

void Trainer::request_pause(const std::string& reason) { decisions_.request_pause(reason); }

void Trainer::log_mean(const std::string& name, double value) {
  UT_CHECK(loop_ != nullptr, "log_mean('", name, "') is only possible during fit()");
  loop_->add_train_mean(name, value);
}

void Trainer::log_mean(const std::string& name, const torch::Tensor& value) {
  UT_CHECK(loop_ != nullptr, "log_mean('", name, "') is only possible during fit()");
  UT_CHECK(value.defined() && value.numel() == 1, "log_mean('", name,
           "') takes a scalar, got a tensor of ", value.defined() ? value.numel() : 0, " elements");
  loop_->add_train_mean(name, value);
}

void Trainer::print(const std::string& message) const { log::info(message); }

void Trainer::prepare_run_dir(bool resuming) {
  if (run_dir_ready_) return;
  prepare_writable_dir(run_dir());
  const std::string archived = resuming ? "" : archive_previous_run(run_dir());
  log::add_file(run_dir() + "/train.log");
  if (!archived.empty()) log::info("run_dir held an earlier run: its files moved to " + archived);
  run_dir_ready_ = true;
}

OptimizerPtr Trainer::configure_optimizer(TrainModule& module) {
  return build_optimizer(settings_->optimizer, module);
}

std::unique_ptr<Precision> Trainer::configure_precision(torch::nn::Module& weights) {
  return std::make_unique<Precision>(options().precision, weights, options().loss_scaler);
}

SchedulerPtr Trainer::configure_scheduler(const ScheduleContext& context) {
  return scheduler_registry().create(settings_->scheduler, context);
}

void Trainer::check_monitored_metrics(bool has_val) const {
  if (has_val) return;
  auto check = [](const std::string& key, const std::string& metric) {
    UT_CHECK(metric.rfind("val/", 0) != 0, key, ": '", metric,
             "' is a validation metric, but "
             "this run has no validation data, so it would never be reported: set data.val or "
             "data.validation_ratio (in C++: pass validation data to fit()), or unset ",
             key);
  };
  if (settings_->checkpoint.enabled)
    check("checkpoint.best.metric", settings_->checkpoint.best_metric);
  check("early_stopping.metric", settings_->early_stopping.metric);
}

std::shared_ptr<ProcessGroup> Trainer::tensor_group() {
  if (!joined_early_) joined_early_ = join(read_dist_env());
  return joined_early_->plan.tensor_group;
}

Trainer::Joined Trainer::join(const DistEnv& env) {
  check_model_cut(*settings_);
  // The device before the processes join: data parallelism on GPUs talks through NCCL.
  Joined j{set_up_device(*settings_, env), {}};
  j.plan = ParallelPlan::make(
      join_group(env, j.device.device), static_cast<int>(settings_->distributed.tensor_parallel),
      static_cast<int>(settings_->distributed.pipeline_parallel), settings_->distributed.zero > 0);
  if (j.plan.tensor > 1) {
    log::info(fmt::format(
        "tensor parallel: {} processes a tensor group, {} data-parallel replica{} (this "
        "process: part {} of its group's {}, replica {})",
        j.plan.tensor, j.plan.data_size(), j.plan.data_size() == 1 ? "" : "s",
        j.plan.tensor_group->rank(), j.plan.pipeline > 1 ? "stage" : "model", j.plan.data_rank()));
  }
  return j;
}

std::shared_ptr<ProcessGroup> Trainer::join_group(const DistEnv& env, const torch::Device& device) {
  // A data-parallel run when the launcher says so (torchrun, unitrain launch, mpirun, srun);
  // a launched process alone forms a group of one only when distributed.backend names one.
  std::shared_ptr<ProcessGroup> group;
  if (env.distributed() || (env.launcher != "none" && settings_->distributed.backend != "auto")) {
    ProcessGroupOptions options = settings_->distributed.group_options(device);
    options.flight_file = fmt::format("{}/logs/flight-rank-{}.json", run_dir(), env.rank);
    // After a failed collective, 3 s to unwind and log; then the process ends regardless.
    options.exit_after_failure = std::chrono::seconds(3);
    group = ProcessGroup::join(env, options);
    group->follow(&position_);
    // Other ranks' lines say which rank they come from, unless unitrain launch, which prefixes
    // every line of its workers already, started this one.
    const bool launcher_prefixes = std::getenv("UNITRAIN_LAUNCH_PREFIXES_LINES") != nullptr;
    log::set_prefix(env.rank == 0 || launcher_prefixes ? "" : fmt::format("[rank {}] ", env.rank));
    if (env.rank != 0) log::console_warnings_only();
    // Where the processes met: the launcher's address, or a file (unitrain launch on one
    // machine, which listens on no port).
    const std::string met = env.world_size == 1 ? std::string("a store of its own")
                            : env.store_file.empty()
                                ? fmt::format("{}:{}", env.master_addr, env.master_port)
                                : "the file store " + env.store_file;
    log::info(fmt::format("data parallel: rank {} of {} ({} via {}, {})", group->rank(),
                          group->world_size(), env.launcher, met, group->backend()));
  }
  return group;
}

void Trainer::prepare_run_folder(ProcessGroup* group, bool resuming,
                                 const std::vector<std::string>& classes) {
  // Rank 0 prepares run_dir (archiving an earlier run's files) before the others log there;
  // the lines said before go to the log files first.
  if (!group || group->rank() == 0) {
    prepare_run_dir(resuming);
    write_class_names(run_dir(), classes);
  }
  if (!group) return;
  group->barrier();
  if (group->rank() != 0) {
    prepare_writable_dir(run_dir() + "/logs");
    log::add_file(fmt::format("{}/logs/train-rank-{}.log", run_dir(), group->rank()));
  }
}

namespace {

/// A run that failed while training (not a refusal, which changes nothing): its error in
/// train.log and results/summary.json's status, whoever called fit(). Best effort: the caller
/// gets the failure itself either way.
void record_failure(const std::string& run_dir, const std::string& name, const TrainState& state,
                    const std::exception& e) {
  try {
    const std::string text = error_text(e, std::string::npos);
    log::error_in_file(text);  // the caller, who gets the exception, says it
    write_failed_summary(run_dir, name, state, read_dist_env().world_size, text);
  } catch (const std::exception&) {
  }
}

}  // namespace

FitResult Trainer::fit(TrainModule& module, DatasetPtr train, DatasetPtr val) {
  try {
    return run_fit(module, std::move(train), std::move(val));
  } catch (const std::exception& e) {
    // Once the run's folder is ready every failure is the run's, a bad input met while
    // training too (an example of another shape: a ConfigError, exit 2).
    if (run_dir_ready_) record_failure(run_dir(), settings_->name, state(), e);
    loop_.reset();
    module_ = nullptr;
    // Refused before it wrote anything: a folder this run created goes again.
    if (run_dir_lock_ && run_dir_lock_->undo_creation()) run_dir_lock_.reset();
    callbacks_.on_exception(e);
    throw;
  }
}

std::shared_ptr<ProcessGroup> Trainer::prepare_fit(const DistEnv& env, TrainModule& module,
                                                   ResumePoint& resume) {
  // The process that writes the run folder (rank 0) holds its lock before it reads anything
  // there: a second run on the folder stops here.
  if (env.rank == 0 && !run_dir_lock_) {
    run_dir_lock_ = RunDirLock::acquire(run_dir(), new_run_option(config_));
  }
  if (env.rank == 0) warn_unread_keys(config_);  // keys the config sets that nothing read
  const CheckpointOptions& ckpt = settings_->checkpoint;
  if (ckpt.enabled && !options().test_mode)
    resume = read_resume(*settings_, config_, env.rank == 0);
  // A rollback restores the last checkpoint: there must be checkpoints.
  UT_CHECK(!options().rolls_back() || ckpt.enabled || options().test_mode,
           options().on_nonfinite == OnNonFinite::Rollback ? "train.on_nonfinite"
                                                           : "train.divergence.action",
           ": rollback restores the run's last checkpoint, but checkpoint.enabled is false; "
           "enable checkpoints, or use skip or stop");
  // The processes, joined now unless tensor_group() joined them for the model's building.
  const Joined joined = joined_early_ ? std::move(*joined_early_) : join(env);
  joined_early_.reset();
  const FitDevice& fit = joined.device;
  parallel_ = joined.plan;
  std::shared_ptr<ProcessGroup> group = parallel_.world;
  UT_CHECK(parallel_.tensor == 1 || !tp::splits_of(module.weights()).empty(),
           "distributed.tensor_parallel: ", parallel_.tensor,
           ": the model has no layers cut over a tensor group (built in: transformer_lm, gpt2, "
           "llama and the llama-shaped families but Phi-3; a C++ model builds its layers from "
           "parallel/tensor_parallel.h's with Trainer::tensor_group()); set it to 1 for data "
           "parallelism alone");
  if (!resume.dir.empty()) {
    auto settings = std::make_unique<RunSettings>(*settings_);
    fit_resume_to_world(resume, parallel_.data_size(), *settings, parallel_.cuts_model());
    settings_ = std::move(settings);
  }
  check_finished_run_resume(resume, *settings_, config_);
  announce_device(fit, options());
  // Every replica starts from the first's weights (a tensor group's processes hold parts).
  place_module(module, parallel_.cuts_model() ? parallel_.data.get() : group.get(), *settings_,
               fit.device);
  parallel_.stage = cut_into_stages(module, parallel_, *settings_);
  // bf16-true casts the model here, before the gradient buckets are laid out for its dtype.
  precision_ = configure_precision(module.weights());
  UT_CHECK(precision_ != nullptr, "configure_precision() returned no Precision");
  // Each replica its own draws; a tensor group's processes the same ones (the dropout of
  // the activations they hold whole must agree).
  torch::manual_seed(settings_->seed + static_cast<uint64_t>(parallel_.data_rank()));
  decisions_.start(group != nullptr, (!group || group->rank() == 0) && ckpt.every_auto,
                   ckpt.auto_min_seconds, ckpt.auto_max_seconds);
  return group;
}

FitResult Trainer::run_fit(TrainModule& module, DatasetPtr train, DatasetPtr val) {
  UT_CHECK(train != nullptr, "fit() needs training data (data.train)");
  check_monitored_metrics(val != nullptr);
  // checkpoint.best.mode: auto is the direction `module` declares for the metric (ConfigError
  // naming the key when it declares none).
  auto settings = std::make_unique<RunSettings>(*settings_);
  if (settings->checkpoint.enabled) settings->checkpoint.resolve_best_direction(module);
  const EarlyStoppingOptions& stop = settings->early_stopping;  // the same, before any folder
  if (!stop.metric.empty()) {
    monitored_direction(stop.mode, stop.metric, module, "early_stopping.metric",
                        "early_stopping.mode");
  }
  settings_ = std::move(settings);
  // Plan: the run folder's lock, the checkpoint to resume from, the processes, precision, the
  // threads (a count chosen once: a resume's is the checkpoint's); then the loop's parts.
  const DistEnv env = read_dist_env();
  ResumePoint resume;
  std::shared_ptr<ProcessGroup> group = prepare_fit(env, module, resume);
  auto threads = govern_threads(options().threads, env.local_world_size, resume, group.get());
  const std::vector<std::string> classes = train->class_names();
  loop_ = std::make_unique<TrainLoop>(
      LoopInputs{*settings_, config_, callbacks_, decisions_, *precision_, module, group,
                 std::move(threads), parallel_},
      std::move(train), std::move(val), resume);
  TrainLoop& loop = *loop_;
  module_ = &module;
  loop.start([&](const RunPlan& plan) {  // the optimizers; the last refusals
    return configure_loop_optimizers(module, plan, group != nullptr);
  });
  // Restore what the checkpoint holds of the run's parts, before the run folder changes: a
  // checkpoint that does not fit refuses the resume here and leaves the folder as it was.
  loop.list_checkpoints(checkpoint_entries_);
  if (!resume.dir.empty()) loop.restore(resume);
  // Nothing refused the run: its folder, then its logs and checkpoints there.
  prepare_run_folder(group.get(), !resume.dir.empty(), classes);
  if (!resume.world_change.empty()) log::info(resume.world_change);
  loop.open_run_files(resume);
  callbacks_.call("on_fit_start", &Callback::on_fit_start);
  if (!resume.dir.empty()) loop.restore_callbacks(resume);
  // The run's config once nothing refused it and it trains: a refused resume, or a rerun of a
  // finished run that trains nothing, leaves the run's as it was (it describes what trained).
  const bool nothing_to_train = loop.announce();
  if ((!group || group->rank() == 0) && !nothing_to_train) {
    write_file_atomic(run_dir() + "/config.yaml", run_config_text(config_, *settings_));
  }
  if (nothing_to_train) {
    log::info(finished_run_line(loop.counters(), stop_decided(), *settings_, config_));
  }
  train_until_finished(loop);
  callbacks_.call("on_train_end", &Callback::on_train_end);
  const FitResult result = conclude_fit(loop, *settings_);  // summary.json, the last lines
  last_fit_ = {result, loop.plan().process, loop.log_events()};
  callbacks_.call("on_fit_end", &Callback::on_fit_end, result);
  loop_.reset();
  module_ = nullptr;
  return result;
}

std::unique_ptr<LoopOptimizers> Trainer::configure_loop_optimizers(TrainModule& module,
                                                                   const RunPlan& plan,
                                                                   bool distributed) {
  const bool per_epoch = settings_->schedule_per_epoch;
  auto setup = std::make_unique<OptimizerSetup>(plan.schedule_context(per_epoch, 0.0));
  module.configure_optimizers(*setup);
  if (!setup->entries().empty()) {
    check_manual_optimization(options(), plan.accumulation,
                              distributed ? settings_->distributed.zero : 0);
    warn_unused_trainer_sections(config_, setup->entries().size(), plan.process);
    return std::make_unique<LoopOptimizers>(std::move(setup), per_epoch);
  }
  OptimizerPtr optimizer = configure_optimizer(module);
  UT_CHECK(optimizer != nullptr, "configure_optimizer() returned no optimizer");
  UT_CHECK(!distributed || !needs_closure(*optimizer),
           "optimizer.type: lbfgs re-evaluates the loss inside its step, which data-parallel "
           "training does not support; use another optimizer or one process");
  SchedulerPtr schedule = configure_scheduler(plan.schedule_context(per_epoch, get_lr(*optimizer)));
  return std::make_unique<LoopOptimizers>(std::move(optimizer), std::move(schedule), per_epoch);
}

torch::optim::Optimizer* Trainer::optimizer() const {
  return loop_ && loop_->optimizers() ? loop_->optimizers()->trainers() : nullptr;
}

std::vector<std::pair<std::string, torch::optim::Optimizer*>> Trainer::optimizers() const {
  if (!loop_ || !loop_->optimizers()) return {};
  return loop_->optimizers()->all();
}

void Trainer::train_until_finished(TrainLoop& loop) {
  module_->train();
  StopSignalGuard signals(settings_->checkpoint.on_signal_numbers());
  callbacks_.call("on_train_start", &Callback::on_train_start);
  // The phases marked in position_ are what the watchdog and the flight records name.
  StallWatchdog watchdog(options().watchdog, position_, loop.group(), loop.plan().process,
                         static_cast<int>(settings_->checkpoint.on_signal_exit_code));
  loop.run(position_);
}

}  // namespace unitrain
