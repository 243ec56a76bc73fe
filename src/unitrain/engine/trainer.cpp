#include "unitrain/engine/trainer.h"

#include <torch/torch.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>
#include <cmath>
#include <fmt/format.h>

#include "unitrain/core/error.h"
#include "unitrain/dist/data_parallel.h"
#include "unitrain/dist/dist_env.h"
#include "unitrain/dist/distributed_options.h"
#include "unitrain/dist/reduce_metrics.h"
#include "unitrain/engine/evaluator.h"
#include "unitrain/engine/run_config.h"
#include "unitrain/engine/run_env.h"
#include "unitrain/engine/stop_signal.h"
#include "unitrain/engine/trainer_loop.h"
#include "unitrain/log/console.h"
#include "unitrain/log/console_tracker.h"

namespace unitrain {
namespace {

/// A pause after each optimizer step, for fault-injection tests (kill a worker mid-run).
void maybe_delay_step_for_tests() {
  static const long ms = [] {
    const char* v = std::getenv("UNITRAIN_TEST_STEP_DELAY_MS");
    return v ? std::atol(v) : 0L;
  }();
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// True when a period in steps or samples elapsed between two points of the run.
bool crossed(const TrainUnit& period, int64_t steps, int64_t samples_before, int64_t samples) {
  switch (period.unit) {
    case TrainUnit::Unit::Steps: return steps % period.count == 0;
    case TrainUnit::Unit::Samples: return samples_before / period.count != samples / period.count;
    case TrainUnit::Unit::Epochs: return false;
  }
  return false;
}

}  // namespace

namespace {

/// The log options of this rank: metrics files, console metrics and progress from rank 0 only.
LogOptions rank_log_options(const Config& log_section, int rank) {
  LogOptions o = LogOptions::from_config(log_section);
  if (rank != 0) {
    o.trackers.clear();
    o.progress_bar = "false";
  }
  return o;
}

}  // namespace

Trainer::Loop::Loop(Trainer& trainer, TrainModule& m, DatasetPtr train, DatasetPtr val,
                    const ResumePoint& resume, std::shared_ptr<ProcessGroup> process_group)
    : t(trainer), module(m),
      train_loader(std::move(train), LoaderOptions::from_config(trainer.config_.at("data").at("loader")),
                   static_cast<uint64_t>(trainer.config_.get_int("seed")), "data.train"),
      group(std::move(process_group)),
      rank(group ? group->rank() : 0),
      world(group ? group->world_size() : 1),
      logger(rank_log_options(trainer.config_.at("log"), rank),
             rank == 0 ? trainer.run_dir_ : std::string(), resume.log_events),
      ckpt_options(CheckpointOptions::from_config(trainer.config_.at("checkpoint"))),
      early(EarlyStoppingOptions::from_config(trainer.config_.at("early_stopping"))),
      best_value(std::numeric_limits<double>::quiet_NaN()) {
  if (val) {
    LoaderOptions vo = train_loader.options();
    vo.shuffle(false).drop_last(false);
    val_loader = std::make_unique<Loader>(std::move(val), vo, 0, "data.val");
  }
  if (group) {
    // Each rank reads its shard: training padded to equal lengths (every rank takes the same
    // steps), validation disjoint (every example counted once).
    train_loader.shard(rank, world, /*pad=*/true);
    if (val_loader) val_loader->shard(rank, world, /*pad=*/false);
    const DistributedOptions d = DistributedOptions::from_config(t.config_.at("distributed"));
    sync = std::make_unique<DataParallelSync>(group, module.weights().parameters(),
                                              d.data_parallel_options());
    broadcast_buffers = d.broadcast_buffers && !module.weights().buffers().empty();
  } else {
    sync = std::make_unique<NoGradientSync>();
  }
  accumulation = t.options_.resolve_accumulation(train_loader.options().batch_size_, world);
  batches_per_epoch = train_loader.batches_per_epoch();
  steps_per_epoch = (batches_per_epoch + accumulation - 1) / accumulation;
  const TrainUnit& len = t.options_.max_length;
  const int64_t samples_per_step = train_loader.options().batch_size_ * accumulation * world;
  total_steps = len.unit == TrainUnit::Unit::Epochs  ? len.count * steps_per_epoch
                : len.unit == TrainUnit::Unit::Steps ? len.count
                                                     : (len.count + samples_per_step - 1) / samples_per_step;
  if (ckpt_options.enabled && !t.options_.test_mode && rank == 0) {  // rank 0 writes them
    checkpointer = std::make_unique<Checkpointer>(ckpt_options, t.run_dir_ + "/checkpoints");
    checkpointer->clean_partial();  // folders of saves that a crash or SIGKILL interrupted
  }
}

Trainer::Loop::~Loop() = default;

std::vector<float> Trainer::Loop::shared_flags(bool bad) const {
  const int sig = StopSignalGuard::received();
  return {bad ? 1.f : 0.f, t.state_.should_stop ? 1.f : 0.f, sig == SIGINT ? 1.f : 0.f,
          sig == SIGTERM ? 1.f : 0.f};
}

void Trainer::Loop::agree(const std::vector<float>& flags) {
  if (flags.size() < 4) return;
  if (flags[1] > 0) t.state_.should_stop = true;
  if (agreed_signal == 0) agreed_signal = flags[2] > 0 ? SIGINT : flags[3] > 0 ? SIGTERM : 0;
}

int Trainer::Loop::stop_signal() const {
  return group ? agreed_signal : StopSignalGuard::received();
}

/// Samples in the accumulation window that batch `b` of an epoch belongs to.
int64_t Trainer::Loop::window_samples(int64_t b) const {
  const int64_t first = (b / accumulation) * accumulation;
  const int64_t last = std::min(first + accumulation, batches_per_epoch);
  const int64_t bs = train_loader.options().batch_size_;
  int64_t n = (last - first) * bs;
  if (last == batches_per_epoch) {
    const int64_t tail = train_loader.epoch_size() % bs;
    if (tail != 0 && !train_loader.options().drop_last_) n -= bs - tail;
  }
  return n;
}

double Trainer::Loop::elapsed() const {
  return time_offset + std::chrono::duration<double>(Clock::now() - start).count();
}

LogEvent Trainer::Loop::event(MetricMap metrics) const {
  return {t.state_.step, t.state_.epoch, t.state_.samples, elapsed(), std::move(metrics)};
}

void Trainer::Loop::log_train() {
  if (train_sums.empty()) return;
  if (group) all_reduce_metrics(*group, train_sums);  // every rank's samples
  MetricMap m;
  for (const auto& [k, v] : train_sums.result()) m["train/" + k] = v;
  m["train/lr"] = lr->lr();
  if (t.state_.skipped_steps > 0) m["train/skipped_steps"] = double(t.state_.skipped_steps);
  train_sums.clear();
  logger.log(event(m));
  result.last_train = m;
  for (auto& cb : t.callbacks_) cb->on_log(t, m);
}

namespace {

std::vector<std::string> keys(const MetricMap& m) {
  std::vector<std::string> out;
  for (const auto& kv : m) out.push_back(kv.first);
  return out;
}

/// The value of `key` in a validation pass's metrics; ConfigError naming `who` otherwise.
double monitored(const MetricMap& m, const std::string& key, const std::string& who) {
  auto it = m.find(key);
  UT_CHECK(it != m.end(), who, " monitors '", key, "' but validation reports: ",
           fmt::format("{}", fmt::join(keys(m), ", ")));
  return it->second;
}

}  // namespace

void Trainer::Loop::validate() {
  if (!val_loader || last_val_step == t.state_.step) return;
  last_val_step = t.state_.step;
  MetricAccumulator sums =
      evaluate_sums(module, *val_loader, EvalSplit::Val, t.options_.test_mode ? 1 : -1);
  if (group) all_reduce_metrics(*group, sums);  // each rank read a disjoint shard
  MetricMap m;
  for (const auto& [name, value] : sums.result()) m["val/" + name] = value;
  logger.log(event(m));
  result.last_val = m;
  if (Scheduler* s = lr->scheduler(); s && s->needs_metric()) {
    s->observe(monitored(m, s->monitored_metric(), "scheduler"));
    lr->apply(lr->per_epoch() ? t.state_.epoch : t.state_.step);
  }
  if (!ckpt_options.best_metric.empty()) {
    const double v = monitored(m, ckpt_options.best_metric, "checkpoint.best.metric");
    if (ckpt_options.improves(v, best_value)) {
      best_value = v;
      want_best_save = true;
    }
  }
  early_stopping(m);
  for (auto& cb : t.callbacks_) cb->on_validation_end(t, m);
}

void Trainer::Loop::early_stopping(const MetricMap& m) {
  if (early.metric.empty()) return;
  TrainState& s = t.state_;
  const double v = monitored(m, early.metric, "early_stopping.metric");
  const bool better = std::isnan(s.best_metric) ||
                      (early.mode == MetricMode::Min ? v < s.best_metric - early.min_delta
                                                     : v > s.best_metric + early.min_delta);
  if (better) {
    s.best_metric = v;
    s.stall_count = 0;
    return;
  }
  if (++s.stall_count >= early.patience) {
    log::info(fmt::format("early stopping: {} has not improved on {} for {} validations", early.metric,
                          format_metric(s.best_metric), s.stall_count));
    s.should_stop = true;
  }
}

bool Trainer::Loop::length_reached() const {
  const TrainUnit& len = t.options_.max_length;
  const TrainState& s = t.state_;
  if (s.should_stop) return true;
  switch (len.unit) {
    case TrainUnit::Unit::Epochs: return s.epoch >= len.count;
    case TrainUnit::Unit::Steps: return s.step >= len.count;
    case TrainUnit::Unit::Samples: return s.samples >= len.count;
  }
  return false;
}

bool Trainer::Loop::run_epoch() {
  TrainState& s = t.state_;
  auto it = train_loader.epoch(s.epoch, s.batch_in_epoch);
  while (auto batch = it->next()) {
    const int64_t b = s.batch_in_epoch;
    const int64_t n = batch->size();
    const bool last = (b + 1) % accumulation == 0 || b + 1 == batches_per_epoch;
    if (broadcast_buffers && s.micro_in_window == 0) {
      unitrain::broadcast_buffers(*group, module.weights());
    }
    // The loss is scaled by this micro-batch's share of the window and, across ranks, by
    // 1 / ranks, so the summed gradients are the average (DataParallelOptions::average).
    MicroStepResult r =
        runner->run(*batch, double(n) / window_samples(b) / double(world), last, s.step + 1);
    const int64_t samples_before = s.samples;
    s.batch_in_epoch++;
    s.micro_in_window = last ? 0 : s.micro_in_window + 1;
    s.samples += n * world;  // every rank read a batch of the same size
    train_sums.add("loss", MetricValue(torch::tensor(r.loss, torch::kFloat64)), n);
    train_sums.add(r.metrics, n);
    if (r.stepped) {
      maybe_delay_step_for_tests();
      s.step++;
      if (r.skipped) s.skipped_steps++;
      if (!lr->per_epoch()) lr->apply(s.step);
      MetricMap step_metrics{{"train/loss", r.loss}};
      for (auto& cb : t.callbacks_) cb->on_step_end(t, step_metrics);
      logger.progress(s.step, total_steps, s.epoch + 1, r.loss);
      if (t.options_.test_mode) {
        log_train();
        validate();
        s.should_stop = true;
        break;
      }
      if (crossed(t.options_.log_every, s.step, samples_before, s.samples)) log_train();
      if (crossed(t.options_.val_every, s.step, samples_before, s.samples)) validate();
    }
    maybe_save(r.stepped, samples_before, false);
    if (result.signal != 0 || (r.stepped && length_reached())) break;
  }
  result.data_wait_seconds += it->wait_seconds();
  if (result.signal != 0) return false;
  if (s.batch_in_epoch < batches_per_epoch && length_reached()) return false;
  s.epoch++;
  s.batch_in_epoch = 0;
  if (lr->per_epoch()) lr->apply(s.epoch);
  for (auto& cb : t.callbacks_) cb->on_epoch_end(t);
  const TrainUnit& log_every = t.options_.log_every;
  if (log_every.unit == TrainUnit::Unit::Epochs && s.epoch % log_every.count == 0) log_train();
  const TrainUnit& val_every = t.options_.val_every;
  if (val_every.unit == TrainUnit::Unit::Epochs && s.epoch % val_every.count == 0) validate();
  maybe_save(false, s.samples, true);
  return result.signal == 0 && !length_reached();
}

Trainer::Trainer(const Config& config) : config_(resolve_run_config(config)) {
  options_ = TrainOptions::from_config(config_.at("train"));
  run_dir_ = config_.get_string("run_dir");
  torch::manual_seed(static_cast<uint64_t>(config_.get_int("seed")));
}

Trainer::~Trainer() = default;

void Trainer::add_callback(std::shared_ptr<Callback> callback) {
  callbacks_.push_back(std::move(callback));
}

void Trainer::print(const std::string& message) const { log::info(message); }

void Trainer::prepare_run_dir(bool resuming) {
  if (run_dir_ready_) return;
  prepare_writable_dir(run_dir_);
  const std::string archived = resuming ? "" : archive_previous_run(run_dir_);
  log::add_file(run_dir_ + "/train.log");
  if (!archived.empty()) log::info("run_dir held an earlier run: its files moved to " + archived);
  write_file_atomic(run_dir_ + "/config.yaml", config_.dump());
  run_dir_ready_ = true;
}

OptimizerPtr Trainer::configure_optimizer(TrainModule& module) {
  return build_optimizer(config_.at("optimizer"), module);
}

SchedulerPtr Trainer::configure_scheduler(const ScheduleContext& context) {
  return scheduler_registry().create(config_.at("scheduler"), context);
}

MetricMap Trainer::evaluate(TrainModule& module, DatasetPtr data, EvalSplit split,
                            const std::string& prefix) {
  LoaderOptions o = LoaderOptions::from_config(config_.at("data").at("loader"));
  o.shuffle(false).drop_last(false);
  Loader loader(std::move(data), o, 0, prefix == "test" ? "data.test" : "data.val");
  return unitrain::evaluate(module, loader, split, prefix, options_.test_mode ? 1 : -1);
}

FitResult Trainer::fit(TrainModule& module, DatasetPtr train, DatasetPtr val) {
  UT_CHECK(train != nullptr, "fit() needs training data (data.train)");
  const int64_t threads = options_.resolve_threads();
  set_threads(threads);
  const CheckpointOptions ckpt = CheckpointOptions::from_config(config_.at("checkpoint"));
  ResumePoint resume;
  if (ckpt.enabled && !options_.test_mode) {
    resume = read_resume_point(
        Checkpointer(ckpt, run_dir_ + "/checkpoints").find_resume(ckpt.resume));
  }
  // A data-parallel run when the launcher says so (torchrun, unitrain launch, mpirun, srun).
  std::shared_ptr<ProcessGroup> group;
  const DistEnv env = read_dist_env();
  if (env.distributed()) {
    const DistributedOptions d = DistributedOptions::from_config(config_.at("distributed"));
    group = ProcessGroup::join(env, d.group_options());
    log::set_prefix(env.rank == 0 ? "" : fmt::format("[rank {}] ", env.rank));
    if (env.rank != 0) log::console_warnings_only();
  }
  // Rank 0 prepares run_dir (archiving an earlier run's files) before the others log there.
  if (!group || group->rank() == 0) prepare_run_dir(!resume.dir.empty());
  if (group) {
    group->barrier();
    if (group->rank() != 0) {
      prepare_writable_dir(run_dir_ + "/logs");
      log::add_file(fmt::format("{}/logs/train-rank-{}.log", run_dir_, group->rank()));
    }
    log::info(fmt::format("data parallel: rank {} of {} ({} via {}:{})", group->rank(),
                          group->world_size(), env.launcher, env.master_addr, env.master_port));
    broadcast_module(*group, module.weights());  // every rank starts from rank 0's weights
  }
  torch::manual_seed(static_cast<uint64_t>(config_.get_int("seed")) +
                     static_cast<uint64_t>(group ? group->rank() : 0));
  state_ = TrainState();
  Loop loop(*this, module, std::move(train), std::move(val), resume, group);
  optimizer_ = configure_optimizer(module);
  UT_CHECK(!group || dynamic_cast<torch::optim::LBFGS*>(optimizer_.get()) == nullptr,
           "optimizer.type: lbfgs re-evaluates the loss inside its step, which data-parallel "
           "training does not support; use another optimizer or one process");
  ScheduleContext ctx;
  ctx.per_epoch = config_.at("scheduler").get_string("interval") == "epoch";
  ctx.steps_per_epoch = loop.steps_per_epoch;
  ctx.samples_per_step = loop.train_loader.options().batch_size_ * loop.accumulation * loop.world;
  ctx.total_steps = ctx.per_epoch ? (loop.total_steps + loop.steps_per_epoch - 1) / loop.steps_per_epoch
                                  : loop.total_steps;
  ctx.base_lr = get_lr(*optimizer_);
  loop.lr = std::make_unique<LrController>(*optimizer_, configure_scheduler(ctx), ctx.per_epoch);
  loop.lr->apply(0);
  loop.runner = std::make_unique<StepRunner>(module, *optimizer_, options_, *loop.sync);
  if (group) {
    loop.runner->set_shared_flags([&loop](bool bad) { return loop.shared_flags(bad); },
                                  [&loop](const std::vector<float>& f) { loop.agree(f); });
  }
  loop.runner->set_before_update([&loop] {
    if (loop.checkpointer) loop.checkpointer->wait_snapshot();
  });
  if (!resume.dir.empty()) loop.restore(resume.dir);
  log::info(fmt::format(
      "training: {} samples, {} batches/epoch of {}, accumulation {}, {} optimizer steps; "
      "threads {}, reader threads {}, BLAS {}", loop.train_loader.dataset_size(),
      loop.batches_per_epoch, loop.train_loader.options().batch_size_, loop.accumulation,
      loop.total_steps, threads, loop.train_loader.reader_threads(), loaded_blas_library()));
  module.train();
  StopSignalGuard signals;
  for (auto& cb : callbacks_) cb->on_train_start(*this);
  if (loop.length_reached()) {
    log::info(fmt::format("training already complete at step {} (train.max_length {})",
                          state_.step, options_.max_length.str()));
  } else {
    while (true) {
      for (auto& cb : callbacks_) cb->on_epoch_start(*this);
      if (!loop.run_epoch()) break;
    }
  }
  if (loop.result.signal == 0) {
    loop.log_train();
    if (!options_.test_mode) loop.validate();
    if (loop.ckpt_options.final) loop.maybe_save(false, state_.samples, false, true);
  }
  if (Checkpointer* c = loop.checkpointer.get()) {
    c->wait();
    loop.result.checkpoints_saved = c->saves();
    loop.result.checkpoint_write_seconds = c->write_seconds();
    loop.result.checkpoint_blocking_seconds += c->snapshot_wait_seconds();  // at the fence
    log::file_only(fmt::format("checkpoints: {} saved; training waited {:.2f} s for them, writing "
                               "took {:.2f} s", c->saves(), loop.result.checkpoint_blocking_seconds,
                               c->write_seconds()));
  }
  loop.logger.finish();
  for (auto& cb : callbacks_) cb->on_train_end(*this);
  loop.result.state = state_;
  loop.result.seconds = loop.elapsed();
  log::info(fmt::format("{}: {} steps, {} epochs, {} samples in {:.1f} s; waited {:.2f} s for data",
                        loop.result.signal ? "stopped by a signal" : "done", state_.step,
                        state_.epoch, state_.samples, loop.result.seconds,
                        loop.result.data_wait_seconds));
  optimizer_.reset();
  return loop.result;
}

}  // namespace unitrain
