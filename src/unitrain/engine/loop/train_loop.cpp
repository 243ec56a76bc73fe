// The Trainer's loop, part by part: the micro-batches of each epoch, the step's counters,
// logging and validation. Its checkpoints (restore, rollback, its own entry):
// train_loop_checkpoints.cpp.
#include "unitrain/engine/loop/train_loop.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>

#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/checkpoints/checkpoint_entries.h"
#include "unitrain/engine/loop/evaluator.h"
#include "unitrain/engine/loop/run_decisions.h"
#include "unitrain/engine/setup/run_device.h"
#include "unitrain/engine/setup/run_folder.h"
#include "unitrain/log/console.h"
#include "unitrain/parallel/data_parallel.h"
#include "unitrain/parallel/reduce_metrics.h"
#include "unitrain/parallel/shard_module.h"
#include "unitrain/parallel/sharded_parameters.h"
#include "unitrain/parallel/sharded_sync.h"

namespace unitrain {
TrainLoop::TrainLoop(LoopInputs in, DatasetPtr train, DatasetPtr val, const ResumePoint& resume)
    : settings_(in.settings),
      config_(in.config),
      callbacks_(in.callbacks),
      state_(in.counters),
      decisions_(in.decisions),
      precision_(in.precision),
      module_(in.module),
      device_(device_of(in.module.weights())),
      extra_entries_(in.extra_entries),
      group_(std::move(in.group)),
      threads_(std::move(in.threads)),
      periods_(settings_.train.log_every, settings_.train.val_every, settings_.checkpoint.every),
      // Batches pinned for a GPU (data.loader.pin_memory); the module is on the run's device.
      // A resumed run keeps the shuffle it trained with (its checkpoint's data_order).
      train_loader_(train, settings_.loader.for_device(device_.is_cuda()), settings_.seed,
                    "data.train", resume.dir.empty() ? kCurrentShuffle : resume.file.data_order),
      logger_(settings_.log.of_rank(group_ ? group_->rank() : 0),
              settings_.log.segment(config_.dump(), settings_.run_dir, group_ ? group_->rank() : 0,
                                    group_ ? group_->world_size() : 1,
                                    resume.dir.empty() ? 0 : resume.file.state.step,
                                    resume.dir.empty() ? -1 : resume.file.log_events)) {
  const int rank = group_ ? group_->rank() : 0;
  const int world = group_ ? group_->world_size() : 1;
  if (val) {
    val_loader_ =
        std::make_unique<Loader>(std::move(val), train_loader_.options().in_order(), 0, "data.val");
  }
  if (group_) {
    // Each rank reads its shard: training padded to equal lengths (every rank takes the same
    // steps), validation disjoint (every example counted once).
    train_loader_.shard(rank, world, /*pad=*/true);
    if (val_loader_) val_loader_->shard(rank, world, /*pad=*/false);
    broadcast_buffers_ =
        settings_.distributed.broadcast_buffers && !module_.weights().buffers().empty();
  }
  plan_ = RunPlan::make(settings_.train, train_loader_, rank, world);
  periods_.set_batches_per_epoch(plan_.batches_per_epoch);
  if (settings_.profile.enabled) {
    profiler_ = std::make_unique<Profiler>(settings_.profile, rank, device_.is_cuda());
  }
  CheckpointSetup setup =
      CheckpointSetup::of(settings_, config_, plan_, group_ != nullptr, !callbacks_.empty());
  setup.classes_text = class_names_json(train->class_names());
  setup.data_order = train_loader_.shuffle_algorithm();
  checkpoints_ = std::make_unique<TrainCheckpoints>(std::move(setup), state_, logger_, decisions_,
                                                    profiler_.get());
}

TrainLoop::~TrainLoop() { module_.set_run(nullptr); }

void TrainLoop::make_gradient_sync(bool manual) {
  if (!group_) {
    sync_ = std::make_unique<NoGradientSync>();
    return;
  }
  if (settings_.distributed.zero == 3 && !manual) {  // each unit reduces its own gradients
    sync_ = std::make_unique<ShardedSync>(group_);
    return;
  }
  DataParallelOptions dp = settings_.distributed.data_parallel_options();
  for (const auto& p : module_.weights().named_parameters()) dp.names.push_back(p.key());
  dp.gradient_views = !manual;            // the module's optimizers zero their gradients themselves
  if (settings_.distributed.zero == 2) {  // (its precisions are checked at fit()'s start)
    gradient_owners_ = bucket_owners(module_.weights().parameters(), group_->world_size());
    dp.owners = gradient_owners_;
  }
  sync_ = std::make_unique<DataParallelSync>(group_, module_.weights().parameters(), dp);
}

void TrainLoop::start(std::unique_ptr<LoopOptimizers> optimizers) {
  optimizers_ = std::move(optimizers);
  const bool manual = optimizers_->manual();
  make_gradient_sync(manual);
  optimizers_->follow(state_);
  torch::optim::Optimizer* trainers = manual ? nullptr : optimizers_->all()[0].second;
  // ZeRO stage 3: the optimizer steps this rank's shards (before bf16-true's masters are made
  // for what it steps).
  if (group_ && trainers && settings_.distributed.zero == 3) {
    sharded_params_ = shard_module(group_, module_, *trainers, precision_.masters(),
                                   settings_.distributed.unit_min_params,
                                   settings_.distributed.prefetches(device_.is_cuda()));
  }
  step_runner_ = std::make_unique<StepRunner>(module_, trainers, settings_.train, *sync_,
                                              callbacks_, precision_, profiler_.get());
  module_run_ = std::make_unique<LoopModuleRun>(
      state_, plan_.rank, plan_.world,
      [this](const std::string& name, double value) { add_train_mean(name, value); }, *sync_,
      *optimizers_, module_.weights().parameters());
  module_.set_run(module_run_.get());
  // After the runner: bf16-true's precision has put the float32 masters into the groups.
  if (group_ && !manual && settings_.distributed.zero == 1) {
    sharding_ = std::make_unique<OptimizerSharding>(group_, *trainers);
  } else if (group_ && !manual && settings_.distributed.zero == 2) {  // the buckets' owners
    sharding_ = std::make_unique<OptimizerSharding>(
        group_, *trainers, module_.weights().parameters(), gradient_owners_);
  }
  if (sharding_) step_runner_->shard(sharding_.get());
  if (divergence_.watches_spikes()) step_runner_->watch(&divergence_);
  if (step_runner_->defers_reads())
    train_sums_ = MetricAccumulator(MetricAccumulator::Reads::Deferred);
  periods_.start_at(state_);
  optimizers_->remember_lrs();
  list_checkpoint_entries(trainers);
}

void TrainLoop::list_checkpoint_entries(torch::optim::Optimizer* trainers) {
  // What a checkpoint holds, in the order it saves and restores.
  TrainCheckpoints& c = *checkpoints_;
  c.add(static_cast<CheckpointEntry&>(*this));
  if (sharded_params_) {
    const std::string root = settings_.run_dir + "/checkpoints";
    c.add(sharded_model_entry(module_, *sharded_params_, *group_, state_, precision_.masters(),
                              root));
    for (ParameterState* state : parameter_states()) {  // kept by parts too
      c.add(sharded_state_entry(*state, module_, *sharded_params_, *group_, root));
    }
  } else {
    c.add(model_entry(module_, precision_));
  }
  if (trainers) {
    c.add(optimizer_entry(*trainers, module_.weights(), group_.get(), sharding_.get(),
                          settings_.run_dir + "/checkpoints", sharded_params_.get()));
  }
  c.add(gradients_entry(module_, state_));
  optimizers_->add_entries(c, state_);
  c.add(callbacks_entry(callbacks_));
  c.add(loss_scaler_entry(precision_));
  if (divergence_.watches_spikes() || settings_.train.rolls_back()) {
    c.add(divergence_entry(divergence_));
  }
  c.add(rng_entry(group_.get()));
  for (const auto& e : extra_entries_) c.add(*e);  // Trainer::add_checkpoint_entry's
}

std::vector<ParameterState*> TrainLoop::parameter_states() const {
  std::vector<ParameterState*> out;
  for (const auto& callback : callbacks_.all()) {
    if (ParameterState* state = callback->parameter_state()) out.push_back(state);
  }
  return out;
}

bool TrainLoop::length_reached() const {
  return state_.should_stop || reached(settings_.train.max_length, state_, plan_.batches_per_epoch);
}

bool TrainLoop::finished() const {
  return already_complete_ || decisions_.ended_early() ||
         (state_.micro_in_window == 0 && length_reached());
}

bool TrainLoop::announce() {
  log::info(fmt::format(
      "training: {} samples, {} batches/epoch of {}, accumulation {}, {} optimizer steps; "
      "precision {}, threads {}, reader threads {}, BLAS {}",
      train_loader_.dataset_size(), plan_.batches_per_epoch, plan_.batch_size, plan_.accumulation,
      plan_.total_steps, precision_name(precision_.mode()), threads_->threads(),
      train_loader_.reader_threads(), loaded_blas_library()));
  log::info(threads_->why());
  already_complete_ = length_reached();
  return already_complete_;
}

std::optional<Batch> TrainLoop::next_batch() {
  if (!epoch_batches_) {
    epoch_batches_ = train_loader_.epoch(state_.epoch, state_.batch_in_epoch);
    callbacks_.call("on_epoch_start", &Callback::on_epoch_start);
  }
  // A step lasts from the fetch of its first micro-batch to that of the next step's.
  if (profiler_) profiler_->begin_step(state_.step + 1);
  Profiler::Range wait(profiler_.get(), Phase::DataWait);
  return epoch_batches_->next();
}

MicroStep TrainLoop::forward_backward(const Batch& batch) {
  if (broadcast_buffers_ && state_.micro_in_window == 0) {
    unitrain::broadcast_buffers(*group_, module_.weights());
  }
  const int64_t b = state_.batch_in_epoch;
  // The loss is scaled by this micro-batch's share of the window and, across ranks, by
  // 1 / ranks, so the summed gradients are the average (DataParallelOptions::average).
  const double weight = double(batch.size()) / plan_.window_samples(b) / double(plan_.world);
  callbacks_.call("on_train_batch_start", &Callback::on_train_batch_start, batch);
  // (On a GPU the copy stays in device_batch_: L-BFGS's update() re-evaluates it.)
  return step_runner_->forward_backward(on_device(batch, device_, device_batch_), weight,
                                        plan_.ends_window(b), decisions_.mine(), state_.step + 1);
}

void TrainLoop::advance(const Batch& batch, const MicroStep& m) {
  const int64_t n = batch.size();
  state_.batch_in_epoch++;
  state_.micro_in_window = m.window_end ? 0 : state_.micro_in_window + 1;
  state_.samples += n * plan_.world;                // every rank read a batch of the same size
  train_sums_.add("loss", MetricValue(m.loss), n);  // read at log time when deferred
  train_sums_.add(m.metrics, n);
  if (!m.window_end) {
    return callbacks_.call("on_train_batch_end", &Callback::on_train_batch_end, batch, m);
  }
  state_.step++;
  if (m.skipped) state_.skipped_steps++;
  decisions_.step_ended(m.decision);  // what any rank decided holds for all
  optimizers_->step_ended(state_);    // train/lr: what this step used; the schedule moves on
  if (auto changed = threads_->follow()) log::info(*changed);
  callbacks_.call("on_train_batch_end", &Callback::on_train_batch_end, batch, m);
  if (!callbacks_.empty()) {  // (a host read of the loss each step: callbacks see it as a number)
    callbacks_.call("on_step_end", &Callback::on_step_end,
                    MetricMap{{"train/loss", m.loss_value()}});
  }
  // `epoch` counts completed epochs everywhere (progress bar, log lines, metrics files,
  // checkpoints), the epoch a step ends included. The loss is read only when a bar is drawn.
  logger_.progress(state_.step, plan_.total_steps, epochs_done(), [&m] { return m.loss_value(); });
}

void TrainLoop::log_and_validate() {
  if (settings_.train.test_mode) {  // one step, one validation batch, then stop
    log_train();
    validate();
    state_.should_stop = true;
    return;
  }
  if (periods_.due(Periods::Log, state_)) log_train();
  if (periods_.due(Periods::Validate, state_)) validate();
  if (length_reached()) finish_logs();
}

bool TrainLoop::epoch_complete() const {
  return decisions_.stopped_by_signal() == 0 && at_epoch_end();
}

void TrainLoop::close_epoch_batches() {
  if (!epoch_batches_) return;
  data_wait_seconds_ += epoch_batches_->wait_seconds();
  epoch_batches_.reset();
}

void TrainLoop::end_epoch() {
  close_epoch_batches();
  state_.epoch++;
  state_.batch_in_epoch = 0;
  optimizers_->epoch_ended(state_);
  callbacks_.call("on_epoch_end", &Callback::on_epoch_end);
  if (periods_.due(Periods::Log, state_)) log_train();
  if (periods_.due(Periods::Validate, state_)) validate();
  if (length_reached()) finish_logs();
  save_if_due();
}

void TrainLoop::finish() {
  close_epoch_batches();
  if (!decisions_.ended_early() && !already_complete_) {
    finish_logs();
    if (settings_.checkpoint.final) checkpoints_->save_if_due(periods_, /*force=*/true);
  }
  checkpoints_->finish();
  logger_.finish(!decisions_.ended_early());
  if (profiler_) write_profile();
  if (sharded_params_) {  // the module whole again for what comes after fit (tests, export)
    // The optimizer steps the parts, which a next fit() cuts anew: its state is freed first.
    if (!optimizers_->manual()) {
      optimizer_state_bytes_ = optimizer_state_bytes(*optimizers_->all()[0].second);
    }
    optimizers_->clear_states();
    unshard_module(module_, *sharded_params_);
    for (ParameterState* state : parameter_states()) {
      make_state_whole(*state, module_, *sharded_params_);
    }
  }
}

FitResult TrainLoop::result() const {
  FitResult r;
  r.last_train = last_train_;
  r.last_val = last_val_;
  r.data_wait_seconds = data_wait_seconds_;
  r.resumed_from = resumed_from_;
  r.last_checkpoint = checkpoints_->last_checkpoint();
  r.checkpoints_saved = checkpoints_->saves();
  r.checkpoint_blocking_seconds = checkpoints_->blocking_seconds();
  r.checkpoint_write_seconds = checkpoints_->write_seconds();
  r.signal = decisions_.stopped_by_signal();
  r.paused = decisions_.paused();
  r.already_complete = already_complete_;
  r.rollbacks = divergence_.rollbacks();
  r.optimizer_state_bytes = optimizer_state_bytes_;
  r.state = state_;
  r.seconds = seconds();
  return r;
}

double TrainLoop::seconds() const { return already_complete_ ? time_offset_ : elapsed(); }

void TrainLoop::add_train_mean(const std::string& name, double value) {
  train_sums_.add(name, MetricValue(torch::tensor(value, torch::kFloat64), 1.0), 1);
}

void TrainLoop::write_profile() {
  const ProfileResult p = profiler_->finish(device_.str(), peak_memory_bytes(device_));
  if (p.steps == 0) {
    log::warn(
        fmt::format("profile: no step was recorded (the run took {} steps; profile.wait + "
                    "profile.warmup is {})",
                    state_.step, settings_.profile.wait + settings_.profile.warmup));
    return;
  }
  log::info(p.table);
  if (settings_.train.test_mode) return;  // no run folder
  const std::string dir = settings_.run_dir + "/profile";
  prepare_writable_dir(dir);
  const std::string suffix = plan_.rank == 0 ? "" : fmt::format("-rank-{}", plan_.rank);
  write_file_atomic(dir + "/summary" + suffix + ".json", p.summary_json);
  if (!p.trace_json.empty()) {
    write_file_atomic(fmt::format("{}/trace-rank-{}.json", dir, plan_.rank), p.trace_json);
  }
  log::file_only("profile: " + dir + "/summary" + suffix + ".json" +
                 (p.trace_json.empty() ? "" : fmt::format(", trace-rank-{}.json", plan_.rank)));
}

double TrainLoop::elapsed() const {
  return time_offset_ + std::chrono::duration<double>(Clock::now() - start_time_).count();
}

LogEvent TrainLoop::event(MetricMap metrics) const {
  return {state_.step, epochs_done(), state_.samples, elapsed(), std::move(metrics)};
}

void TrainLoop::log_train() {
  if (train_sums_.empty()) return;
  Profiler::Range range(profiler_.get(), Phase::Logging);
  if (group_) all_reduce_metrics(*group_, train_sums_);  // every rank's samples
  MetricMap m;
  for (const auto& [k, v] : train_sums_.result()) m["train/" + k] = v;
  optimizers_->add_lrs(m);
  if (const LossScaler* scaler = precision_.scaler()) m["train/loss_scale"] = scaler->scale();
  if (state_.skipped_steps > 0) m["train/skipped_steps"] = double(state_.skipped_steps);
  train_sums_.clear();
  callbacks_.call("on_before_log", &Callback::on_before_log, m);
  logger_.log(event(m));
  last_train_ = m;
  callbacks_.call("on_log", &Callback::on_log, m);
}

void TrainLoop::validate() {
  if (!val_loader_ || last_val_step_ == state_.step) return;
  last_val_step_ = state_.step;
  Profiler::Range range(profiler_.get(), Phase::Validation);
  callbacks_.call("on_validation_start", &Callback::on_validation_start);
  MetricAccumulator sums =
      evaluate_sums(module_, *val_loader_, EvalSplit::Val, settings_.train.test_mode ? 1 : -1,
                    &callbacks_, &precision_);
  if (group_) all_reduce_metrics(*group_, sums);  // each rank read a disjoint shard
  MetricMap m;
  for (const auto& [name, value] : sums.result()) m["val/" + name] = value;
  logger_.log(event(m));
  last_val_ = m;
  optimizers_->observe_validation(m, state_);
  checkpoints_->observe_validation(m);
  callbacks_.call("on_validation_end", &Callback::on_validation_end, m);
  // Data-parallel: a stop any rank's callbacks asked for in this pass stops every rank now.
  decisions_.agree_after_validation([this](bool mine) {
    std::vector<torch::Tensor> asked{torch::tensor(mine ? 1.0f : 0.0f)};
    group_->all_reduce_max(asked);
    return asked[0].item<float>() > 0;
  });
}

void TrainLoop::finish_logs() {
  log_train();
  if (!settings_.train.test_mode) validate();
}

}  // namespace unitrain
