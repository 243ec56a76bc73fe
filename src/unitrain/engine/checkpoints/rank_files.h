#pragma once
// write_rank_files: the files of a checkpoint that every rank writes for itself (ZeRO's
// optimizer partitions, distributed.zero: 3's model parts).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "unitrain/checkpoint/checkpoint_store.h"

namespace unitrain {

class ProcessGroup;

/// The ranks other than 0 write their file now (`make` its bytes), beside the checkpoints under
/// `root` (.partial-<kind>-step-<S>-rank-<R>-<writer>.pt: a save that fails leaves it to
/// clean_partial), and tell rank 0 its
/// path, size and CRC in an all-gather that is also the barrier: rank 0 gets the files of ranks
/// 1.. (named `name_of(rank)`) to move into the checkpoint folder with its save. A rank that
/// cannot write says so instead, and every rank fails naming it and `what` (none waits for a
/// file that will not come). Rank 0's own file is its caller's to add.
std::vector<CheckpointFile> write_rank_files(ProcessGroup& group, const std::string& root,
                                             int64_t step, const std::string& kind,
                                             const std::string& what,
                                             const std::function<std::string(int)>& name_of,
                                             const std::function<std::vector<char>()>& make);

}  // namespace unitrain
