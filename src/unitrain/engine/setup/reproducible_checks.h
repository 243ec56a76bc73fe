#pragma once
// distributed.reproducible's refusals: what would make a step's result depend on the world
// size, named before anything runs.
namespace torch::optim {
class Optimizer;
}

namespace unitrain {

struct RunSettings;
class TrainModule;

/// ConfigError naming the keys, before the run folder is touched, when distributed.reproducible
/// is on and: `world` processes do not divide its G; distributed.zero is 3 (its parts are cut by
/// the world size; not built yet); train.cuda_graphs; train.accumulation_steps or
/// train.global_batch_size disagree with G / world micro-steps of data.loader.batch_size; or
/// the intra-op thread count is left to auto (train.threads: 0 without OMP_NUM_THREADS), which
/// picks by the processes per machine. Nothing when it is off.
void check_reproducible(const RunSettings& settings, int world);

/// ConfigError when distributed.reproducible is on and the step cannot be cut into shards that
/// run alike anywhere: a batch-norm layer (its statistics are the micro-shard's, and its
/// running ones per rank), manual optimization (`trainers` null: the module steps its own), or
/// an optimizer that re-evaluates the loss (L-BFGS).
void check_reproducible_step(const RunSettings& settings, TrainModule& module,
                             const torch::optim::Optimizer* trainers);

}  // namespace unitrain
