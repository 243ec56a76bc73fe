// The Trainer's loop, part by part: the micro-batches of each epoch, the step's counters,
// logging, validation, early stopping and the decisions ranks agree on (trainer_checkpoint.cpp
// has its saves and restores).
#include "unitrain/engine/trainer_loop.h"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <fmt/format.h>

#include "unitrain/core/error.h"
#include "unitrain/engine/evaluator.h"
#include "unitrain/engine/run_env.h"
#include "unitrain/engine/stop_signal.h"
#include "unitrain/log/console.h"
#include "unitrain/parallel/data_parallel.h"
#include "unitrain/parallel/reduce_metrics.h"

namespace unitrain {
namespace {

/// The log options of this rank: metrics files, console metrics and progress from rank 0 only
/// (with log.all_ranks, every rank's trackers, in LogOptions::rank_dir; no progress bar).
LogOptions rank_log_options(LogOptions o, int rank) {
  if (rank != 0) {
    if (!o.all_ranks) o.trackers.clear();
    o.progress_bar = "false";
  }
  return o;
}

/// What this rank's trackers are told of the run segment.
RunInfo rank_run_info(const Config& config, const LogOptions& log, const std::string& run_dir,
                      int rank, int world, const ResumePoint& resume) {
  RunInfo r;
  r.config_yaml = config.dump();
  r.run_dir = run_dir;
  r.dir = log.rank_dir(run_dir, rank);
  r.rank = rank;
  r.world_size = world;
  r.first_step = (resume.dir.empty() ? 0 : resume.state.step) + 1;
  r.keep_events = resume.log_events;
  return r;
}

}  // namespace

Trainer::Loop::Loop(Trainer& t, TrainModule& m, DatasetPtr train, DatasetPtr val,
                    const ResumePoint& resume, std::shared_ptr<ProcessGroup> process_group)
    : trainer(t), hooks(t.callbacks_), state(t.state_), settings(*t.settings_), module(m),
      group(std::move(process_group)),
      periods(settings.train.log_every, settings.train.val_every, settings.checkpoint.every),
      train_loader(std::move(train), settings.loader, settings.seed, "data.train"),
      logger(rank_log_options(settings.log, group ? group->rank() : 0),
             rank_run_info(t.config_, settings.log, settings.run_dir, group ? group->rank() : 0,
                           group ? group->world_size() : 1, resume)),
      best_value(std::numeric_limits<double>::quiet_NaN()) {
  const int rank = group ? group->rank() : 0;
  const int world = group ? group->world_size() : 1;
  if (val) val_loader = std::make_unique<Loader>(std::move(val), settings.loader.in_order(), 0, "data.val");
  if (group) {
    // Each rank reads its shard: training padded to equal lengths (every rank takes the same
    // steps), validation disjoint (every example counted once).
    train_loader.shard(rank, world, /*pad=*/true);
    if (val_loader) val_loader->shard(rank, world, /*pad=*/false);
    DataParallelOptions dp = settings.distributed.data_parallel_options();
    if (settings.distributed.zero >= 2) {
      const PrecisionMode mode = t.precision_->mode();
      UT_CHECK(mode == PrecisionMode::Fp32 || mode == PrecisionMode::Bf16Mixed,
               "distributed.zero: 2 works with train.precision fp32 or bf16-mixed, not ",
               precision_name(mode), " (its gradients go to float32 master weights or through "
               "a loss scaler that sees every gradient); use distributed.zero: 1");
      gradient_owners = bucket_owners(module.weights().parameters(), world);
      dp.owners = gradient_owners;
    }
    sync = std::make_unique<DataParallelSync>(group, module.weights().parameters(), dp);
    broadcast_buffers = settings.distributed.broadcast_buffers && !module.weights().buffers().empty();
  } else {
    sync = std::make_unique<NoGradientSync>();
  }
  plan = RunPlan::make(settings.train, train_loader, rank, world);
  if (settings.profile.enabled) profiler = std::make_unique<Profiler>(settings.profile, rank);
  const CheckpointOptions& ckpt = settings.checkpoint;
  if (ckpt.enabled && !settings.train.test_mode && rank == 0) {  // rank 0 writes them
    checkpointer = std::make_unique<Checkpointer>(ckpt, settings.run_dir + "/checkpoints");
    checkpointer->clean_partial();  // folders of saves that a crash or SIGKILL interrupted
  }
}

Trainer::Loop::~Loop() = default;

void Trainer::Loop::start(torch::optim::Optimizer& optimizer, SchedulerPtr schedule) {
  lr = std::make_unique<LrController>(optimizer, std::move(schedule), settings.schedule_per_epoch);
  lr->follow(state);
  steps = std::make_unique<StepRunner>(module, optimizer, settings.train, *sync, hooks,
                                       *trainer.precision_, profiler.get());
  // After the runner: bf16-true's precision has put the float32 masters into the groups.
  if (group && settings.distributed.zero == 1) {
    sharding = std::make_unique<OptimizerSharding>(group, optimizer);
  } else if (group && settings.distributed.zero >= 2) {  // the owners of the gradient buckets
    sharding = std::make_unique<OptimizerSharding>(group, optimizer, module.weights().parameters(),
                                                   gradient_owners);
  }
  if (sharding) steps->shard(sharding.get());
  if (steps->defers_reads()) train_sums = MetricAccumulator(MetricAccumulator::Reads::Deferred);
  periods.start_at(state);
}

int Trainer::Loop::stop_signal() const {
  return group ? agreed_signal : StopSignalGuard::received();
}

bool Trainer::Loop::length_reached() const {
  return state.should_stop || reached(settings.train.max_length, state);
}

bool Trainer::Loop::finished() const {
  return result.already_complete || result.signal != 0 || !result.paused.empty() ||
         (state.micro_in_window == 0 && length_reached());
}

bool Trainer::Loop::pause_requested() const {
  return group ? agreed_pause : !trainer.pause_reason_.empty();
}

void Trainer::Loop::announce() {
  log::info(fmt::format(
      "training: {} samples, {} batches/epoch of {}, accumulation {}, {} optimizer steps; "
      "precision {}, threads {}, reader threads {}, BLAS {}", train_loader.dataset_size(),
      plan.batches_per_epoch, plan.batch_size, plan.accumulation, plan.total_steps,
      precision_name(trainer.precision_->mode()), threads->threads(),
      train_loader.reader_threads(), loaded_blas_library()));
  log::info(threads->why());
  if (length_reached()) {
    trainer.report_finished_run();
    result.already_complete = true;
  }
}

std::optional<Batch> Trainer::Loop::next_batch() {
  if (!epoch_batches) {
    epoch_batches = train_loader.epoch(state.epoch, state.batch_in_epoch);
    hooks.call("on_epoch_start", &Callback::on_epoch_start);
  }
  // A step lasts from the fetch of its first micro-batch to that of the next step's.
  if (profiler) profiler->begin_step(state.step + 1);
  Profiler::Range wait(profiler.get(), Phase::DataWait);
  return epoch_batches->next();
}

MicroStep Trainer::Loop::forward_backward(const Batch& batch) {
  if (broadcast_buffers && state.micro_in_window == 0) {
    unitrain::broadcast_buffers(*group, module.weights());
  }
  const int64_t b = state.batch_in_epoch;
  // The loss is scaled by this micro-batch's share of the window and, across ranks, by
  // 1 / ranks, so the summed gradients are the average (DataParallelOptions::average).
  const double weight = double(batch.size()) / plan.window_samples(b) / double(plan.world);
  hooks.call("on_train_batch_start", &Callback::on_train_batch_start, batch);
  StepDecision mine;
  mine.stop = state.should_stop || trainer.stop_requested_;
  mine.signal = StopSignalGuard::received();
  mine.pause = !trainer.pause_reason_.empty();
  if (plan.rank == 0) read_save_clock(mine);
  return steps->forward_backward(batch, weight, plan.ends_window(b), mine, state.step + 1);
}

void Trainer::Loop::read_save_clock(StepDecision& d) const {
  const CheckpointOptions& c = settings.checkpoint;
  if (!c.every_auto) return;
  const double since = std::chrono::duration<double>(Clock::now() - last_save_time).count();
  d.save_soon = since >= c.auto_min_seconds;
  d.save_now = since >= c.auto_max_seconds;
}

void Trainer::Loop::fence_snapshot() {
  Profiler::Range range(profiler.get(), Phase::Checkpoint);
  if (checkpointer) checkpointer->wait_snapshot();
}

void Trainer::Loop::count(const Batch& batch, const MicroStep& m) {
  const int64_t n = batch.size();
  state.batch_in_epoch++;
  state.micro_in_window = m.window_end ? 0 : state.micro_in_window + 1;
  state.samples += n * plan.world;  // every rank read a batch of the same size
  train_sums.add("loss", MetricValue(m.loss), n);  // read at log time when deferred
  train_sums.add(m.metrics, n);
  if (!m.window_end) return hooks.call("on_train_batch_end", &Callback::on_train_batch_end, batch, m);
  state.step++;
  if (m.skipped) state.skipped_steps++;
  StepDecision clock;  // one process: its own clock, now
  if (!group) read_save_clock(clock);
  auto_save_soon = group ? m.decision.save_soon : clock.save_soon;
  auto_save_now = group ? m.decision.save_now : clock.save_now;
  if (group) {  // what any rank decided holds for all
    if (m.decision.stop) state.should_stop = true;
    if (agreed_signal == 0) agreed_signal = m.decision.signal;
    if (m.decision.pause) agreed_pause = true;
  }
  if (!lr->per_epoch()) lr->follow(state);
  if (auto changed = threads->follow()) log::info(*changed);
  hooks.call("on_train_batch_end", &Callback::on_train_batch_end, batch, m);
  if (!hooks.empty()) {  // (a host read of the loss each step: callbacks see it as a number)
    hooks.call("on_step_end", &Callback::on_step_end, MetricMap{{"train/loss", m.loss_value()}});
  }
  // `epoch` counts completed epochs everywhere: progress bar, log lines, metrics files. The
  // loss is read only when a bar is drawn (at most 10 times a second).
  logger.progress(state.step, plan.total_steps, state.epoch, [&m] { return m.loss_value(); });
}

void Trainer::Loop::log_and_validate() {
  if (settings.train.test_mode) {  // one step, one validation batch, then stop
    log_train();
    validate();
    state.should_stop = true;
    return;
  }
  if (periods.due(Periods::Log, state)) log_train();
  if (periods.due(Periods::Validate, state)) validate();
  if (length_reached()) finish_logs();
}

bool Trainer::Loop::epoch_complete() const {
  return result.signal == 0 && state.batch_in_epoch == plan.batches_per_epoch;
}

void Trainer::Loop::close_epoch_batches() {
  if (!epoch_batches) return;
  result.data_wait_seconds += epoch_batches->wait_seconds();
  epoch_batches.reset();
}

void Trainer::Loop::end_epoch() {
  close_epoch_batches();
  state.epoch++;
  state.batch_in_epoch = 0;
  if (lr->per_epoch()) lr->follow(state);
  hooks.call("on_epoch_end", &Callback::on_epoch_end);
  if (periods.due(Periods::Log, state)) log_train();
  if (periods.due(Periods::Validate, state)) validate();
  if (length_reached()) finish_logs();
  save_if_due();
}

void Trainer::Loop::finish() {
  close_epoch_batches();
  if (result.signal == 0 && result.paused.empty() && !result.already_complete) {
    finish_logs();
    if (settings.checkpoint.final) save_if_due(/*force=*/true);
  }
  if (Checkpointer* c = checkpointer.get()) {
    c->wait();
    result.checkpoints_saved = c->saves();
    result.checkpoint_write_seconds = c->write_seconds();
    result.checkpoint_blocking_seconds += c->snapshot_wait_seconds();  // at the fence
    log::file_only(fmt::format("checkpoints: {} saved; training waited {:.2f} s for them, writing "
                               "took {:.2f} s", c->saves(), result.checkpoint_blocking_seconds,
                               c->write_seconds()));
  }
  logger.finish(result.signal == 0 && result.paused.empty());
  if (profiler) write_profile();
}

void Trainer::Loop::write_profile() {
  const ProfileResult p = profiler->finish();
  if (p.steps == 0) {
    log::warn(fmt::format("profile: no step was recorded (the run took {} steps; profile.wait + "
                          "profile.warmup is {})", state.step,
                          settings.profile.wait + settings.profile.warmup));
    return;
  }
  log::info(p.table);
  if (settings.train.test_mode) return;  // no run folder
  const std::string dir = settings.run_dir + "/profile";
  prepare_writable_dir(dir);
  const std::string suffix = plan.rank == 0 ? "" : fmt::format("-rank-{}", plan.rank);
  write_file_atomic(dir + "/summary" + suffix + ".json", p.summary_json);
  if (!p.trace_json.empty()) {
    write_file_atomic(fmt::format("{}/trace-rank-{}.json", dir, plan.rank), p.trace_json);
  }
  log::file_only("profile: " + dir + "/summary" + suffix + ".json" +
                 (p.trace_json.empty() ? "" : fmt::format(", trace-rank-{}.json", plan.rank)));
}

double Trainer::Loop::elapsed() const {
  return time_offset + std::chrono::duration<double>(Clock::now() - start_time).count();
}

LogEvent Trainer::Loop::event(MetricMap metrics) const {
  return {state.step, state.epoch, state.samples, elapsed(), std::move(metrics)};
}

void Trainer::Loop::log_train() {
  if (train_sums.empty()) return;
  Profiler::Range range(profiler.get(), Phase::Logging);
  if (group) all_reduce_metrics(*group, train_sums);  // every rank's samples
  MetricMap m;
  for (const auto& [k, v] : train_sums.result()) m["train/" + k] = v;
  m["train/lr"] = lr->lr();
  if (const LossScaler* scaler = trainer.precision_->scaler()) m["train/loss_scale"] = scaler->scale();
  if (state.skipped_steps > 0) m["train/skipped_steps"] = double(state.skipped_steps);
  train_sums.clear();
  hooks.call("on_before_log", &Callback::on_before_log, m);
  logger.log(event(m));
  result.last_train = m;
  hooks.call("on_log", &Callback::on_log, m);
}

void Trainer::Loop::validate() {
  if (!val_loader || last_val_step == state.step) return;
  last_val_step = state.step;
  Profiler::Range range(profiler.get(), Phase::Validation);
  hooks.call("on_validation_start", &Callback::on_validation_start);
  MetricAccumulator sums = evaluate_sums(module, *val_loader, EvalSplit::Val,
                                         settings.train.test_mode ? 1 : -1, &hooks,
                                         trainer.precision_.get());
  if (group) all_reduce_metrics(*group, sums);  // each rank read a disjoint shard
  MetricMap m;
  for (const auto& [name, value] : sums.result()) m["val/" + name] = value;
  logger.log(event(m));
  result.last_val = m;
  if (Scheduler* s = lr->scheduler(); s && s->needs_metric()) {
    s->observe(monitored(m, s->monitored_metric(), "scheduler"));
    lr->follow(state);
  }
  const CheckpointOptions& ckpt = settings.checkpoint;
  if (!ckpt.best_metric.empty()) {
    const double v = monitored(m, ckpt.best_metric, "checkpoint.best.metric");
    if (ckpt.improves(v, best_value)) {
      best_value = v;
      want_best_save = true;
    }
  }
  hooks.call("on_validation_end", &Callback::on_validation_end, m);
  if (group) agree_on_stop();
}

void Trainer::Loop::agree_on_stop() {
  std::vector<torch::Tensor> asked{torch::tensor(trainer.stop_requested_ ? 1.0f : 0.0f)};
  group->all_reduce_max(asked);
  if (asked[0].item<float>() > 0) state.should_stop = true;
}

void Trainer::Loop::finish_logs() {
  log_train();
  if (!settings.train.test_mode) validate();
}

}  // namespace unitrain
