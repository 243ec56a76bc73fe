#pragma once
// The optimizer state of a ZeRO run, one file per rank: restored or merged into one file.
#include <string>
#include <vector>

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace unitrain {

/// One optimizer file's bytes and its name for messages.
struct OptimizerFile {
  std::vector<char> bytes;
  std::string what;
};
/// Restores the state of several files that together hold it (a ZeRO run's
/// optimizer-rank-<R>.pt, from any number of ranks: each holds its partition's parameter state
/// under the parameters' indices over the whole optimizer, and every group's options, which
/// are taken from the first). One file: load_optimizer_state. TrainError naming the file when
/// one is not such a file or the files disagree (optimizer type, groups).
void load_optimizer_state(torch::optim::Optimizer& optimizer, std::vector<OptimizerFile> files);
/// The files load_optimizer_state(optimizer, files) reads, as one optimizer file (the same
/// format, every parameter's state in index order), without an optimizer: for `unitrain
/// checkpoint merge`. TrainError naming the file as there.
std::vector<char> merge_optimizer_files(const std::vector<OptimizerFile>& files);

}  // namespace unitrain
