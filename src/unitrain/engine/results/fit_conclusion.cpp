#include "unitrain/engine/results/fit_conclusion.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include <csignal>
#include <filesystem>

#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/core/error.h"
#include "unitrain/core/save_signals.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/engine/loop/train_loop.h"
#include "unitrain/engine/results/profile_files.h"
#include "unitrain/engine/setup/run_device.h"
#include "unitrain/engine/step/pipeline_step.h"
#include "unitrain/log/console.h"
#include "unitrain/log/run_summary.h"
#include "unitrain/parallel/sharded_parameters.h"

namespace unitrain {
namespace {

/// Bytes of `module`'s parameters: all of them, or those with memory here (a pipeline's other
/// stages hold theirs).
int64_t parameter_bytes(const torch::nn::Module& module, bool held_only = false) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) {
    if (held_only && p.storage().nbytes() == 0) continue;
    n += p.numel() * static_cast<int64_t>(p.element_size());
  }
  return n;
}

/// True when a stop by a signal leaves a checkpoint (checkpoint.enabled, not test_mode).
bool saves_checkpoints(const RunSettings& settings) {
  return settings.checkpoint.enabled && !settings.train.test_mode;
}

/// The summary's status and the run's last line after `r` was stopped by a signal: which,
/// whether a checkpoint was saved, the exit status and what it asks for.
std::string stopped_by_signal_text(const RunSettings& settings, const FitResult& r) {
  const std::string by = "stopped by " + signal_name(r.signal);
  if (!saves_checkpoints(settings)) {
    return fmt::format("{}: checkpoints are off, nothing saved; exit {}", by, r.exit_code);
  }
  if (r.signal == SIGINT) return fmt::format("{}: checkpoint saved; exit {}", by, r.exit_code);
  return fmt::format(
      "{}: checkpoint saved; exit {} (checkpoint.on_signal.exit_code): run the same command to "
      "resume",
      by, r.exit_code);
}

void write_summary(const TrainLoop& loop, const RunSettings& settings, const FitResult& r) {
  RunSummary s;
  s.name = settings.name;
  s.status = r.signal != 0       ? RunStatus::StoppedBySignal
             : !r.paused.empty() ? RunStatus::Paused
             : r.stopped         ? RunStatus::StoppedEarly
                                 : RunStatus::Finished;
  s.status_detail = r.signal != 0 ? stopped_by_signal_text(settings, r) : r.paused;
  s.set_counters(r.state);
  s.seconds = r.seconds;
  s.final_train = r.last_train;
  s.final_val = r.last_val;
  const CheckpointOptions& ckpt = settings.checkpoint;
  s.best_metric = ckpt.enabled ? ckpt.best_metric : "";
  s.best_value = loop.best_value();
  std::error_code ec;
  const auto best = std::filesystem::canonical(settings.run_dir + "/checkpoints/best", ec);
  if (!ec && ckpt.enabled) s.best_checkpoint = best.string();
  s.last_checkpoint = r.last_checkpoint;
  s.resumed_from = r.resumed_from;
  s.world_size = loop.plan().processes;
  s.tensor_parallel = loop.tensor_parallel();
  s.pipeline_parallel = loop.pipeline_parallel();
  s.rollbacks = r.rollbacks;
  s.write(settings.run_dir);
}

/// A pipeline stage's wait for the others and the parameter bytes it holds (its last lines).
void log_pipeline_stage(const PipelineStep& pipe, const TrainLoop& loop) {
  const PipelineStage& stage = pipe.stage();
  log::info(fmt::format(
      "pipeline stage {} of {} (units {} to {}): waited {:.3f} s for the other stages in {:.3f} "
      "s of forwards and backwards ({:.1f}%); parameters held: {} bytes of {}",
      stage.stage(), stage.stages(), stage.first_unit(), stage.end_unit() - 1,
      pipe.waited_seconds(), pipe.busy_seconds(),
      pipe.busy_seconds() > 0 ? 100 * pipe.waited_seconds() / pipe.busy_seconds() : 0.0,
      parameter_bytes(loop.module().weights(), true), parameter_bytes(loop.module().weights())));
}

}  // namespace

int exit_code_after_signal(const RunSettings& settings, int signal) {
  if (signal == 0) return 0;
  if (!saves_checkpoints(settings) || signal == SIGINT) return 128 + signal;
  return static_cast<int>(settings.checkpoint.on_signal_exit_code);
}

FitResult conclude_fit(const TrainLoop& loop, const RunSettings& settings) {
  FitResult r = loop.result();
  r.exit_code = exit_code_after_signal(settings, r.signal);
  // A pause saved a checkpoint to be resumed from: the resume code, as after a signal, so a
  // script (or a sweep) tells it from a finished run. Without checkpoints nothing resumes.
  if (!r.paused.empty() && r.signal == 0 && saves_checkpoints(settings)) {
    r.exit_code = static_cast<int>(settings.checkpoint.on_signal_exit_code);
  }
  const int rank = loop.plan().process;
  const TrainState& counters = r.state;
  if (const ProfileResult* profile = loop.profile()) {
    write_profile(*profile, settings, rank, counters.step);
  }
  if (rank == 0 && !settings.train.test_mode) write_summary(loop, settings, r);
  if (r.already_complete) {  // nothing trained now: no times or memory of this process
    log::info(
        fmt::format("nothing trained: the run was complete at {} steps, {} epoch{}, {} "
                    "samples, trained in {:.1f} s",
                    counters.step, counters.epoch, counters.epoch == 1 ? "" : "s", counters.samples,
                    r.seconds));
    return r;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const std::string how = r.signal            ? "stopped by " + signal_name(r.signal)
                          : !r.paused.empty() ? "paused"
                                              : "done";
  const std::optional<int64_t> device_peak = peak_memory_bytes(loop.device());  // a GPU's
  log::info(fmt::format(
      "{}: {} steps, {} epoch{} completed, {} samples in {:.1f} s; waited {:.2f} s "
      "for data; peak RSS {} MB{}",
      how, counters.step, counters.epoch, counters.epoch == 1 ? "" : "s", counters.samples,
      r.seconds, r.data_wait_seconds, usage.ru_maxrss / 1024,
      device_peak
          ? fmt::format("; peak {} memory {} MB", loop.device().str(), *device_peak / (1024 * 1024))
          : ""));
  const torch::optim::Optimizer* trainers = loop.optimizers()->trainers();
  if (loop.group() && trainers) {  // what ZeRO saves, in each rank's log
    log::info(fmt::format(
        "optimizer state on rank {}: {} bytes (distributed.zero: {})", rank,
        r.optimizer_state_bytes >= 0 ? r.optimizer_state_bytes : optimizer_state_bytes(*trainers),
        loop.sharded() ? settings.distributed.zero : 0));
  }
  if (const PipelineStep* pipe = loop.pipeline()) log_pipeline_stage(*pipe, loop);
  if (const ShardedParameters* p = loop.sharded_parameters()) {
    log::info(fmt::format("parameters on rank {}: {} bytes of {} in {} units (distributed.zero: 3)",
                          rank, p->shard_bytes(), p->whole_bytes(), p->units()));
  }
  if (r.signal != 0)
    log::warn(stopped_by_signal_text(settings, r));  // the last line: what comes next
  if (!r.paused.empty() && r.exit_code != 0) {
    log::info(
        fmt::format("paused ({}): checkpoint saved; exit {} (checkpoint.on_signal.exit_code): "
                    "run the same command to resume",
                    r.paused, r.exit_code));
  }
  return r;
}

}  // namespace unitrain
