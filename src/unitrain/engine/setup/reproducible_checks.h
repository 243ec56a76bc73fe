#pragma once
// distributed.reproducible's refusals: what would make a step's result depend on the world
// size, named before anything runs.
namespace torch::optim {
class Optimizer;
}

namespace unitrain {

struct RunSettings;
class ProcessGroup;
class TrainModule;

/// ConfigError naming the keys, before the run folder is touched, when distributed.reproducible
/// is on and: `world` processes do not divide its G; train.cuda_graphs; train.accumulation_steps or
/// train.global_batch_size disagree with G / world micro-steps of data.loader.batch_size; or
/// the intra-op thread count is left to auto (train.threads: 0 without OMP_NUM_THREADS), which
/// picks by the processes per machine. Nothing when it is off.
void check_reproducible(const RunSettings& settings, int world);

/// ConfigError when distributed.reproducible is on and the step cannot be cut into shards that
/// run alike anywhere: a batch-norm layer (its statistics are the micro-shard's, and its
/// running ones per rank), manual optimization (`trainers` null: the module steps its own), or
/// an optimizer that re-evaluates the loss (L-BFGS); under distributed.zero: 3 on several
/// processes (`group`), an optimizer other than adam or adamw with args.fused (LibTorch's steps
/// round a parameter's elements differently by where they fall in its vectorised loops, and
/// ZeRO 3 steps parts of flat buffers, not whole parameters) or with amsgrad.
void check_reproducible_step(const RunSettings& settings, TrainModule& module,
                             const torch::optim::Optimizer* trainers, const ProcessGroup* group);

}  // namespace unitrain
