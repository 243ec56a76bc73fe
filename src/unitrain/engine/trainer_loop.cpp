// The Trainer's loop: epochs of micro-batches, logging, validation, early stopping and the
// data-parallel decisions (trainer_checkpoint.cpp has its saves and restores).
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <fmt/format.h>
#include <thread>

#include "unitrain/core/error.h"
#include "unitrain/parallel/data_parallel.h"
#include "unitrain/parallel/distributed_options.h"
#include "unitrain/parallel/reduce_metrics.h"
#include "unitrain/engine/evaluator.h"
#include "unitrain/engine/stop_signal.h"
#include "unitrain/engine/trainer_loop.h"
#include "unitrain/log/console.h"

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

/// The log options of this rank: metrics files, console metrics and progress from rank 0 only
/// (with log.all_ranks, every rank's trackers, in LogOptions::rank_dir; no progress bar).
LogOptions rank_log_options(const Config& log_section, int rank) {
  LogOptions o = LogOptions::from_config(log_section);
  if (rank != 0) {
    if (!o.all_ranks) o.trackers.clear();
    o.progress_bar = "false";
  }
  return o;
}

/// What this rank's trackers are told of the run segment.
RunInfo rank_run_info(const Config& config, const std::string& run_dir, int rank, int world,
                      const ResumePoint& resume) {
  RunInfo r;
  r.config_yaml = config.dump();
  r.run_dir = run_dir;
  r.dir = LogOptions::from_config(config.at("log")).rank_dir(run_dir, rank);
  r.rank = rank;
  r.world_size = world;
  r.first_step = (resume.dir.empty() ? 0 : resume.state.step) + 1;
  r.keep_events = resume.log_events;
  return r;
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
             rank_run_info(trainer.config_, trainer.run_dir_, rank, world, resume)),
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

void Trainer::Loop::finish_logs() {
  log_train();
  if (!t.options_.test_mode) validate();
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
      // `epoch` counts completed epochs everywhere: progress bar, log lines, metrics files.
      logger.progress(s.step, total_steps, s.epoch, r.loss);
      if (t.options_.test_mode) {
        log_train();
        validate();
        s.should_stop = true;
        break;
      }
      if (crossed(t.options_.log_every, s.step, samples_before, s.samples)) log_train();
      if (crossed(t.options_.val_every, s.step, samples_before, s.samples)) validate();
      if (length_reached()) finish_logs();
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
  if (length_reached()) finish_logs();
  maybe_save(false, s.samples, true);
  return result.signal == 0 && !length_reached();
}

}  // namespace unitrain
