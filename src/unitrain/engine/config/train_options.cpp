#include "unitrain/engine/config/train_options.h"

#include <cstdlib>
#include <thread>

#include "unitrain/core/error.h"

namespace unitrain {

namespace {

using T = TrainOptions;

/// How long a run trains and what one optimizer step takes.
void declare_length_and_step(Options<T>& o) {
  const char* window = "the position in the accumulation window refers to it";
  o.field("max_length", &T::max_length)
      .harmless()
      .help("how long to train (epochs, steps or samples)");
  o.field("accumulation_steps", &T::accumulation_steps)
      .min(1)
      .fixed(window)
      .help("micro-batches whose gradients are summed before one optimizer step");
  o.field("global_batch_size", &T::global_batch_size)
      .gt(0)
      .fixed(window)
      .help(
          "samples per optimizer step over all processes; sets accumulation_steps (both given must "
          "agree)");
  o.field("clip_grad_norm", &T::clip_grad_norm)
      .min(0)
      .help("clip the global gradient L2 norm to this value before each step; 0 = off");
  o.field("loss_average", &T::loss_average,
          {{"samples", LossAverage::Samples}, {"tokens", LossAverage::Tokens}})
      .fixed("a window's update changes with it")
      .help(
          "what a window's micro-batches and the processes are weighted by: samples (each "
          "micro-batch's loss by its share of the window's samples), or tokens (by its share "
          "of the window's target tokens, token_key entries other than -100, on all processes: "
          "the update of the mean loss over every response token; one number summed across "
          "processes per window); validation and test weigh their batches the same way");
  o.field("token_key", &T::token_key)
      .fixed("the token counts change with it")
      .help("loss_average tokens: the batch key whose entries other than -100 are counted");
}

/// Where the numbers are computed and how exactly: threads, device, determinism, matmul precision.
void declare_execution(Options<T>& o) {
  o.field("threads", &T::threads)
      .or_auto()
      .min(1)
      .harmless()
      .help(
          "intra-op threads, fixed for the run (the count is part of the arithmetic: sums are "
          "split by thread); auto = the CPUs this process may use (affinity, cgroup quota), "
          "shared by the job's processes on this machine, whatever their load, and on resume "
          "the count the run started with (OMP_NUM_THREADS, when set, is used instead). Beside "
          "busy programs the threads share the CPUs the others leave free and sleep while they "
          "wait (no number changes); another count on resume is allowed but not bitwise");
  o.field("device", &T::device)
      .harmless()
      .help(
          "where the run trains: cpu, cuda (one GPU per process: cuda:<local rank>), cuda:N, or "
          "auto (cuda when this LibTorch has CUDA and the machine a GPU, else cpu)");
  o.field("deterministic", &T::deterministic)
      .help(
          "deterministic algorithms only: LibTorch's (an operation without one is an error), "
          "cuDNN's deterministic kernels without autotuning, CUBLAS_WORKSPACE_CONFIG=:4096:8 "
          "unless set; on a GPU, runs (and exact resumes) are then bitwise equal, at some speed "
          "(docs/checkpoints.md)");
  o.field("matmul_precision", &T::matmul_precision,
          {{"keep", MatmulPrecision::Keep},
           {"highest", MatmulPrecision::Highest},
           {"high", MatmulPrecision::High},
           {"medium", MatmulPrecision::Medium}})
      .help(
          "float32 matrix products, for the whole process (torch.set_float32_matmul_precision): "
          "highest = full float32; high = TF32 on GPUs that have it (Ampere and later: several "
          "times faster, 10-bit mantissa products); medium = also bfloat16 where LibTorch has "
          "it; keep = as the program left it (highest unless it set another)");
  o.field("cuda_graphs", &T::cuda_graphs)
      .harmless()
      .help(
          "on a GPU, capture the optimizer step (forward, backward, clipping, a fused Adam/AdamW "
          "update) as one CUDA graph after 3 eager steps and replay it: no launch overhead per "
          "kernel. Needs one process, accumulation_steps 1, fp32 or bf16-mixed, on_nonfinite: "
          "stop, batches of one shape, callbacks without hooks inside the step; a run that cannot "
          "be captured is refused with the reason (docs/gpu.md)");
}

/// How a step treats its numbers: non-finite values, spikes, host reads, number formats.
void declare_numerics(Options<T>& o) {
  o.field("on_nonfinite", &T::on_nonfinite,
          {{"stop", OnNonFinite::Stop},
           {"skip", OnNonFinite::Skip},
           {"rollback", OnNonFinite::Rollback}})
      .help(
          "a NaN/Inf loss or gradient: stop with a message, skip that update and count it, or "
          "roll back to the last checkpoint and go on after the batches that led there "
          "(train.divergence's lr_factor and max_rollbacks)");
  o.section("divergence", &T::divergence)
      .help("loss spikes, and rollbacks to the last checkpoint (docs/checkpoints.md)");
  o.field("loss_reads", &T::loss_reads,
          {{"auto", LossReads::Auto},
           {"immediate", LossReads::Immediate},
           {"deferred", LossReads::Deferred}})
      .harmless()
      .help(
          "when the host reads training losses and metrics: immediate = every micro-batch (free "
          "on CPU); deferred = kept as device tensors and read once per log event, non-finite "
          "losses checked on the device and agreed with the step's decision (no host sync per "
          "micro-batch on a GPU; with on_nonfinite: stop in one process, read only before the "
          "next log event, validation or save, which then stops the run naming the step: no "
          "host sync per step); auto = deferred on accelerators, immediate on CPU");
  o.field("precision", &T::precision,
          {{"fp32", PrecisionMode::Fp32},
           {"bf16-mixed", PrecisionMode::Bf16Mixed},
           {"fp16-mixed", PrecisionMode::Fp16Mixed},
           {"bf16-true", PrecisionMode::Bf16True}})
      .help(
          "number formats: fp32; bf16-mixed / fp16-mixed = float32 weights and optimizer, forward "
          "and loss under autocast (fp16-mixed needs CUDA, scales the loss); bf16-true = bfloat16 "
          "model with float32 master weights in the optimizer (docs/precision.md)");
  o.section("loss_scaler", &T::loss_scaler)
      .help("fp16-mixed's dynamic loss scale (PyTorch's GradScaler defaults)");
}

/// How often the run validates and logs, the smoke-test mode; every duration checked positive.
void declare_cadence(Options<T>& o) {
  o.field("val_every", &T::val_every).help("how often to run validation");
  o.field("log_every", &T::log_every).harmless().help("how often to log training metrics");
  o.section("watchdog", &T::watchdog)
      .help("the stall watchdog: a process that makes no progress outside collectives");
  o.field("test_mode", &T::test_mode)
      .help(
          "run one training batch and one validation batch, then exit (a smoke test of the setup)");
  o.check([](T& t, const Config& c) {
    UT_CHECK(t.max_length.count > 0, c.key_path("max_length"), " must be more than 0, got '",
             t.max_length.str(), "'");
    UT_CHECK(t.val_every.count > 0, c.key_path("val_every"), " must be more than 0");
    UT_CHECK(t.log_every.count > 0, c.key_path("log_every"), " must be more than 0");
  });
}

}  // namespace

void TrainOptions::declare(Options<TrainOptions>& o) {
  // In this order in docs/config.md.
  declare_length_and_step(o);
  declare_execution(o);
  declare_numerics(o);
  declare_cadence(o);
}

int64_t TrainOptions::resolve_accumulation(int64_t batch_size, int64_t world_size) const {
  if (!global_batch_size) return accumulation_steps;
  int64_t per_step = batch_size * world_size;
  UT_CHECK(*global_batch_size % per_step == 0, "train.global_batch_size ", *global_batch_size,
           " is not a multiple of data.loader.batch_size x processes = ", batch_size, " x ",
           world_size, " = ", per_step);
  int64_t steps = *global_batch_size / per_step;
  UT_CHECK(accumulation_steps == 1 || accumulation_steps == steps, "train.global_batch_size ",
           *global_batch_size, " implies accumulation_steps ", steps,
           " but train.accumulation_steps is ", accumulation_steps, "; give only one of them");
  return steps;
}

}  // namespace unitrain
