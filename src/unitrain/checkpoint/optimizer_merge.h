#pragma once
// The optimizer state of a ZeRO run, one file per rank: restored or merged into one file.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "unitrain/core/mapped_file.h"
#include "unitrain/core/shard_layout.h"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace unitrain {

/// One optimizer file's bytes and its name for messages.
struct OptimizerFile {
  std::vector<char> bytes;
  std::string what;
};

/// An optimizer file read in place: bytes in memory or a mapped file (of which only what is
/// touched is read from disk), kept alive by `keep`; its name for messages.
struct OptimizerBytes {
  const char* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> keep;
  std::string what;

  static OptimizerBytes of(std::vector<char> bytes, std::string what);
  static OptimizerBytes of(const MappedFile& file, std::string what);
};
/// Restores the state of several files that together hold it (a ZeRO run's
/// optimizer-rank-<R>.pt, from any number of ranks: each holds its partition's parameter state
/// under the parameters' indices over the whole optimizer, and every group's options, which
/// are taken from the first). One file: load_optimizer_state. TrainError naming the file when
/// one is not such a file or the files disagree (optimizer type, groups).
void load_optimizer_state(torch::optim::Optimizer& optimizer, std::vector<OptimizerFile> files);
/// One flat of distributed.zero: 3 (ShardLayout::Flat): its elements, and each rank's part in
/// the run that saved the state and in the run that reads it.
struct FlatCut {
  int64_t length = 0, old_part = 0, new_part = 0;
};
/// distributed.zero: 3's optimizer files (one per rank of the run that saved them, in rank
/// order; each holds the state of its part of every flat it trains, under the flat's index over
/// the optimizer's groups, `flats[index]`) re-cut into `rank`'s part of a run whose parts are
/// `flats[index].new_part`: a state tensor of old_part elements is the concatenation of the
/// files' parts, cut to the flat's length and padded with zeros (only the elements of each
/// file's part that fall in `rank`'s new part are read); the other entries (the step count)
/// are the first file's; restored into `optimizer` (`what` names the files in its errors)
/// without an encoded copy of the new state between. TrainError naming the file when one does
/// not fit.
void load_resharded_optimizer_state(torch::optim::Optimizer& optimizer,
                                    const std::vector<OptimizerBytes>& files,
                                    const std::vector<FlatCut>& flats, int rank,
                                    const std::string& what);
/// distributed.zero: 3's optimizer files (as load_resharded_optimizer_state takes them) as the
/// state of a run without it: by parameter. `layout`: the saved run's (model-shards.json);
/// `group_names[g]`: the names of the parameters of the reading optimizer's group g, in its
/// order. Each parameter's state tensors are its elements of the flat's whole state, in its
/// shape; the other entries (the step count) are the first file's; the groups' options are the
/// files'. One optimizer file, which load_optimizer_state reads. TrainError naming the file
/// when one does not fit, or the parameter when the layout has no such trained member.
std::vector<char> unflatten_optimizer_files(
    const std::vector<OptimizerBytes>& files, const ShardLayout& layout,
    const std::vector<std::vector<std::string>>& group_names);
/// The other way: the state of a run without distributed.zero: 3 (optimizer.pt, or ZeRO 1/2's
/// partitions; `files`, by parameter) as `rank`'s parts of the flats of `layout` (this run's),
/// restored into `optimizer`, whose groups hold the flats' parts in layout order (as
/// load_resharded_optimizer_state takes them). The saved optimizer's parameters in group g are
/// the layout's members of group g in `model_order` (the model's parameter names, in order: as
/// unitrain's optimizers group them). A state tensor of a member's shape is cut into the part
/// (only its elements in `rank`'s part are read; padding is zero); other entries (the step)
/// must agree across a flat's members. TrainError naming the file when a file does not fit, or
/// the parameter when a flat's members were stepped differently.
void load_flattened_optimizer_state(torch::optim::Optimizer& optimizer,
                                    const std::vector<OptimizerBytes>& files,
                                    const ShardLayout& layout,
                                    const std::vector<std::string>& model_order, int rank,
                                    const std::string& what);
/// The files load_optimizer_state(optimizer, files) reads, as one optimizer file (the same
/// format, every parameter's state in index order), without an optimizer: for `unitrain
/// checkpoint merge`. TrainError naming the file as there.
std::vector<char> merge_optimizer_files(const std::vector<OptimizerFile>& files);

}  // namespace unitrain
