#include "unitrain/engine/trainer.h"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <fmt/format.h>

#include "unitrain/core/error.h"
#include "unitrain/dist/data_parallel.h"
#include "unitrain/dist/dist_env.h"
#include "unitrain/dist/distributed_options.h"
#include "unitrain/engine/run_config.h"
#include "unitrain/engine/run_env.h"
#include "unitrain/engine/stop_signal.h"
#include "unitrain/engine/trainer_loop.h"
#include "unitrain/log/console.h"
#include "unitrain/log/console_tracker.h"

namespace unitrain {
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
