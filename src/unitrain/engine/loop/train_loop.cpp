// The Trainer's loop, part by part: the micro-batches of each epoch, the step's counters, when
// to log and validate. Its observation points (log events, validation passes, the checkpoints'
// entries, restore and rollback): train_loop_points.cpp.
#include "unitrain/engine/loop/train_loop.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>

#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/checkpoint/tensor_cut.h"
#include "unitrain/core/error.h"
#include "unitrain/core/run_position.h"
#include "unitrain/engine/checkpoints/checkpoint_entries.h"
#include "unitrain/engine/loop/run_decisions.h"
#include "unitrain/engine/setup/run_device.h"
#include "unitrain/engine/setup/run_folder.h"
#include "unitrain/log/console.h"
#include "unitrain/optim/optimizer.h"
#include "unitrain/parallel/micro_shard_layout.h"
#include "unitrain/parallel/pipeline_stage.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/shard_module.h"
#include "unitrain/parallel/sharded_parameters.h"

namespace unitrain {
TrainLoop::TrainLoop(LoopInputs in, DatasetPtr train, DatasetPtr val, const ResumePoint& resume)
    : settings_(in.settings),
      config_(in.config),
      callbacks_(in.callbacks),
      decisions_(in.decisions),
      precision_(in.precision),
      module_(in.module),
      group_(std::move(in.group)),
      data_group_(in.parallel.cuts_model() ? std::move(in.parallel.data) : group_),
      tensor_group_(std::move(in.parallel.tensor_group)),
      stage_(std::move(in.parallel.stage)),
      threads_(std::move(in.threads)),
      periods_(settings_.train.log_every, settings_.train.val_every, settings_.checkpoint.every),
      data_(std::move(train), std::move(val), settings_, device_of(module_.weights()).is_cuda(),
            resume.dir.empty() ? kCurrentShuffle : resume.file.data_order, data_group_.get()),
      logs_(data_group_.get(), group_ ? group_->rank() : 0) {
  // The data is cut over the replicas: a tensor group's processes read the same batches.
  const int rank = data_group_ ? data_group_->rank() : 0;
  const int world = data_group_ ? data_group_->world_size() : 1;
  plan_ = RunPlan::make(settings_.train, data_.train(), rank, world,
                        settings_.distributed.reproducible);
  plan_.process = group_ ? group_->rank() : 0;
  plan_.processes = group_ ? group_->world_size() : 1;
  data_.plan(settings_, plan_, data_group_.get());
  periods_.set_batches_per_epoch(plan_.batches_per_epoch);
  if (settings_.profile.enabled) {
    profiler_ = std::make_unique<Profiler>(settings_.profile, group_ ? group_->rank() : 0,
                                           device_of(module_.weights()).is_cuda());
  }
}

TrainLoop::~TrainLoop() { module_.set_run(nullptr); }

int TrainLoop::tensor_parallel() const { return tensor_group_ ? tensor_group_->world_size() : 1; }
int TrainLoop::pipeline_parallel() const { return stage_ ? stage_->stages() : 1; }

void TrainLoop::start(const OptimizerFactory& make) {
  optimizers_ = make(plan_);
  optimizers_->follow(counters_);
  step_ = std::make_unique<ProcessStep>(
      StepParts{settings_, data_group_, module_, precision_, callbacks_, profiler_.get(),
                device_of(module_.weights()), tensor_group_, stage_},
      optimizers_->trainers());
  module_run_ = std::make_unique<LoopModuleRun>(
      counters_, plan_.rank, plan_.world, step_->device(),
      [this](const std::string& name, torch::Tensor value) {
        StepGraph* graph = step_->graph();
        if (graph && graph->capturing()) return graph->keep_log(name, value);
        add_train_mean(name, value);
      },
      step_->sync(), *optimizers_, module_.weights().parameters());
  module_.set_run(module_run_.get());
  if (step_->runner().defers_reads()) logs_.defer_reads();
  if (plan_.micro_shards > 0) logs_.order_by_shards();
  logs_.settle_with(step_->nonfinite());  // every log, validation and save settles it first
  periods_.start_at(counters_);
  optimizers_->remember_lrs();
  if (settings_.train.cuda_graphs) step_->capture_steps(plan_, callbacks_.hooking_inside_step());
}

void TrainLoop::list_checkpoints(
    const std::vector<std::shared_ptr<CheckpointEntry>>& program_entries) {
  CheckpointSetup setup =
      CheckpointSetup::of(settings_, config_, plan_, group_ != nullptr, !callbacks_.empty());
  setup.classes_text = class_names_json(data_.class_names());
  setup.data_order = data_.train().shuffle_algorithm();
  setup.threads = threads_->threads();
  checkpoints_ = std::make_unique<TrainCheckpoints>(std::move(setup), counters_, decisions_, logs_,
                                                    profiler_.get());
  list_checkpoint_entries(optimizers_->trainers());
  for (const auto& e : program_entries) {  // Trainer::add_checkpoint_entry's
    checkpoints_->add(*e, TrainCheckpoints::Restores::AfterFitStart);
  }
}

void TrainLoop::open_run_files(const ResumePoint& resume) {
  const int rank = plan_.process;
  logs_.open(std::make_unique<RunLogger>(
      settings_.log.of_rank(rank),
      settings_.log.segment(config_.dump(), settings_.run_dir, rank, plan_.processes,
                            resume.dir.empty() ? 0 : resume.file.state.step,
                            resume.dir.empty() ? -1 : logs_.events())));
  checkpoints_->open();
}

void TrainLoop::run(RunPosition& position) {
  step_->runner().follow(&position);                   // backward marks its phase there
  std::optional<StepGraph::StreamScope> graph_stream;  // cuda_graphs: the loop on its stream
  if (StepGraph* graph = step_->graph()) graph_stream.emplace(*graph);
  // One micro-batch per turn; a window's last one ends with the optimizer step.
  while (!finished()) {
    position.enter("data wait", counters_.step + 1);
    std::optional<Batch> batch = next_batch();  // fetch
    if (!batch) {
      position.enter("epoch end");
      end_epoch();
      continue;
    }
    position.enter("forward");
    const bool replayed = step_->replays();
    MicroStep m = replayed ? graph_step(*batch) : forward_backward(*batch);  // forward, backward
    if (!replayed && m.window_end) {
      // sync, clip, update (an async save's parameter copies taken before it)
      step_->end_window(m, counters_.step + 1, position, [this] { checkpoints_->fence(); });
      if (roll_back(m)) continue;  // diverged: the last checkpoint; the step is not counted
    }
    position.enter("step end");
    advance(*batch, m);  // counters, decisions, schedule
    position.enter("validation");
    if (m.window_end) log_and_validate();  // log, validate
    position.enter("checkpoint");
    save_if_due();  // save
    position.enter("epoch end");
    if (epoch_complete()) end_epoch();
  }
  position.enter("finish");
  finish();  // last logs, final save
}

MicroStep TrainLoop::graph_step(const Batch& batch) {
  callbacks_.call("on_train_batch_start", &Callback::on_train_batch_start, batch);
  checkpoints_->fence();  // an async save's parameter copies are taken before the update
  MicroStep m = step_->replay(batch, decisions_.mine(), counters_.step + 1);
  for (const auto& [name, value] : step_->graph()->logged()) add_train_mean(name, value);
  return m;
}

bool TrainLoop::length_reached() const {
  return decisions_.stop_decided() ||
         reached(settings_.train.max_length, counters_, plan_.batches_per_epoch);
}

bool TrainLoop::finished() const {
  return already_complete_ || decisions_.ended_early() ||
         (counters_.micro_in_window == 0 && length_reached());
}

bool TrainLoop::announce() {
  log::info(fmt::format(
      "training: {} samples, {} batches/epoch of {}, accumulation {}, {} optimizer steps; "
      "precision {}, threads {}, reader threads {}, BLAS {}",
      data_.train().dataset_size(), plan_.batches_per_epoch, plan_.batch_size, plan_.accumulation,
      plan_.total_steps, precision_name(precision_.mode()), threads_->threads(),
      data_.train().reader_threads(), loaded_blas_library()));
  log::info(threads_->why());
  if (!threads_->placement().empty()) log::info(threads_->placement());
  // Reader threads far beyond the CPUs only wait their turn (and each holds its prefetched
  // batches in memory).
  const double cpus = threads_->usable_cpus();
  if (const int64_t readers = data_.train().reader_threads(); readers > 4 * std::ceil(cpus)) {
    log::warn(fmt::format(
        "data.loader.workers {}: this process may use {:g} CPU{}; that many reader threads "
        "only wait their turn, each holding its prefetched batches in memory (a few per CPU "
        "is plenty; auto chooses)",
        readers, std::round(cpus * 100) / 100, cpus == 1 ? "" : "s"));
  }
  already_complete_ = length_reached();
  return already_complete_;
}

std::optional<Batch> TrainLoop::next_batch() {
  if (!data_.epoch_open()) {
    data_.open_epoch(counters_.epoch, counters_.batch_in_epoch);
    callbacks_.call("on_epoch_start", &Callback::on_epoch_start);
  }
  // A step lasts from the fetch of its first micro-batch to that of the next step's.
  if (profiler_) profiler_->begin_step(counters_.step + 1);
  Profiler::Range wait(profiler_.get(), Phase::DataWait);
  return data_.next(counters_.epoch, counters_.batch_in_epoch);
}

MicroStep TrainLoop::forward_backward(const Batch& batch) {
  const int64_t b = counters_.batch_in_epoch;
  // The loss is scaled by this micro-batch's share of the window and, across ranks, by
  // 1 / ranks, so the summed gradients are the average (DataParallelOptions::average).
  // (train.loss_average: tokens — by its share of the window's target tokens on all ranks.)
  const double weight = data_.weight(batch, plan_.window_samples(b), plan_.world);
  callbacks_.call("on_train_batch_start", &Callback::on_train_batch_start, batch);
  if (plan_.micro_shards > 0) {
    // distributed.reproducible: every random draw of the micro-shard (dropout) from (seed,
    // step, shard), not from the process, so that it runs alike on any rank of any world size.
    torch::manual_seed(micro_shard_seed(settings_.seed, counters_.step + 1,
                                        plan_.shard_at(counters_.micro_in_window)));
  }
  return step_->forward_backward(batch, weight, counters_.micro_in_window == 0,
                                 plan_.ends_window(b), decisions_.mine(), counters_.step + 1);
}

void TrainLoop::advance(const Batch& batch, const MicroStep& m) {
  const int64_t n = batch.size();
  counters_.batch_in_epoch++;
  counters_.micro_in_window = m.window_end ? 0 : counters_.micro_in_window + 1;
  counters_.samples += n * plan_.world;  // every rank read a batch of the same size
  // The logged loss is a mean over what the loss averages: samples, or target tokens.
  const int64_t counted = data_.counted(batch);
  // (distributed.pipeline_parallel: the loss exists on the last stage alone, process 0's.)
  if (m.loss.defined()) logs_.add_batch(MetricValue(m.loss), counted, m.metrics, n);
  if (!m.window_end) {
    return callbacks_.call("on_train_batch_end", &Callback::on_train_batch_end, batch, m);
  }
  counters_.step++;
  if (m.skipped) counters_.skipped_steps++;
  decisions_.step_ended(m.decision);   // what any rank decided holds for all
  optimizers_->step_ended(counters_);  // train/lr: what this step used; the schedule moves on
  if (auto changed = threads_->follow()) log::info(*changed);
  callbacks_.call("on_train_batch_end", &Callback::on_train_batch_end, batch, m);
  if (!callbacks_.empty()) {
    // The loss as a number: a host read each step, where reads are deferred only when a
    // callback reads it (Callback::reads_step_values).
    MetricMap metrics;
    if (callbacks_.reads_step_values() || !step_->runner().defers_reads()) {
      metrics["train/loss"] = m.loss_value();
    }
    callbacks_.call("on_step_end", &Callback::on_step_end, metrics);
  }
  // `epoch` counts completed epochs everywhere (progress bar, log lines, metrics files,
  // checkpoints), the epoch a step ends included. The loss is read only when a bar is drawn.
  logs_.logger().progress(counters_.step, plan_.total_steps, epochs_done(),
                          [&m] { return m.loss_value(); });
}

void TrainLoop::log_and_validate() {
  if (settings_.train.test_mode) {  // one step, one validation batch, then stop
    log_train();
    validate();
    decisions_.stop_everywhere();
    return;
  }
  if (periods_.due(Periods::Log, counters_)) log_train();
  if (periods_.due(Periods::Validate, counters_)) validate();
  if (length_reached()) finish_logs();
}

bool TrainLoop::epoch_complete() const {
  return decisions_.stopped_by_signal() == 0 && at_epoch_end();
}

void TrainLoop::close_epoch_batches() { data_.close_epoch(); }

void TrainLoop::end_epoch() {
  close_epoch_batches();
  counters_.epoch++;
  counters_.batch_in_epoch = 0;
  optimizers_->epoch_ended(counters_);
  callbacks_.call("on_epoch_end", &Callback::on_epoch_end);
  if (periods_.due(Periods::Log, counters_)) log_train();
  if (periods_.due(Periods::Validate, counters_)) validate();
  if (length_reached()) finish_logs();
  save_if_due();
}

void TrainLoop::finish() {
  logs_.settle();  // a run ends only when every loss was finite
  close_epoch_batches();
  if (!decisions_.ended_early() && !already_complete_) {
    finish_logs();
    if (settings_.checkpoint.final) checkpoints_->save_if_due(periods_, /*force=*/true);
  }
  checkpoints_->finish();
  logs_.logger().finish(!decisions_.ended_early());
  if (profiler_) profiler_->finish(device().str(), peak_memory_bytes(device()));
  if (ShardedParameters* sharded = step_->sharded_parameters()) {
    // The module whole again for what comes after fit (tests, export).
    // The optimizer steps the parts, which a next fit() cuts anew: its state is freed first.
    optimizers_->free_states();
    unshard_module(module_, *sharded);
    for (ParameterState* state : parameter_states()) {
      make_state_whole(*state, module_, *sharded);
    }
  }
}

FitResult TrainLoop::result() const {
  FitResult r;
  r.last_train = logs_.last_train();
  r.last_val = logs_.last_val();
  r.data_wait_seconds = data_.wait_seconds();
  r.resumed_from = logs_.resumed_from();
  r.last_checkpoint = checkpoints_->last_checkpoint();
  r.checkpoints_saved = checkpoints_->saves();
  r.checkpoint_blocking_seconds = checkpoints_->blocking_seconds();
  r.checkpoint_write_seconds = checkpoints_->write_seconds();
  r.signal = decisions_.stopped_by_signal();
  r.signal_after_end = decisions_.signal_after_end();
  r.paused = decisions_.paused();
  r.already_complete = already_complete_;
  r.rollbacks = step_->divergence().rollbacks();
  r.optimizer_state_bytes = optimizers_->freed_state_bytes();
  r.state = counters_;
  r.stopped = decisions_.stop_decided();
  r.seconds = seconds();
  return r;
}

double TrainLoop::seconds() const {
  return already_complete_ ? logs_.seconds_before() : logs_.elapsed();
}

}  // namespace unitrain
