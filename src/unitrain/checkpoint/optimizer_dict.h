#pragma once
// The dict an optimizer file holds (optimizer_state.h describes it): what optimizer_state.cpp,
// which writes and restores it, optimizer_merge.cpp, which merges ZeRO partitions of it, and
// optimizer_flats.cpp, which re-cuts ZeRO 3's parts, share. Private to those files.
#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "unitrain/checkpoint/optimizer_merge.h"
#include "unitrain/core/error.h"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace unitrain::optimizer_dict {

using Dict = c10::impl::GenericDict;

/// Format 3 writes each group's options as a dict (format 2: a LibTorch archive in a uint8
/// tensor); both load.
constexpr int64_t kOptimizerFormat = 3;
constexpr int64_t kArchiveOptionsFormat = 2;

/// A dict of string -> any value, as the files hold.
inline Dict new_dict() { return Dict(c10::StringType::get(), c10::AnyType::get()); }

/// d[key]; TrainError naming the file `what` when d has no such entry.
inline c10::IValue entry(const Dict& d, const char* key, const std::string& what) {
  auto it = d.find(std::string(key));
  UT_CHECK_TRAIN(it != d.end(), what, " has no '", key, "' entry");
  return it->value();
}

/// Restores `optimizer` from the file `what`'s dict, of kOptimizerFormat or
/// kArchiveOptionsFormat. Everything is checked before anything changes: TrainError naming
/// `what` when the dict does not fit the optimizer (another type, other parameter groups).
void restore(torch::optim::Optimizer& optimizer, const Dict& d, int64_t format,
             const std::string& what);

/// The dict of an optimizer file that can be merged or re-cut (format 3, saved by parameter),
/// its tensors in place in the file's bytes; TrainError naming the file otherwise.
Dict partition_dict(const OptimizerBytes& f);
/// The dicts of `files`, and the first one's entries but "state" (and "groups" unless
/// `with_groups`) into `head`.
std::vector<Dict> partition_dicts(const std::vector<OptimizerBytes>& files, Dict& head,
                                  bool with_groups);
/// Every file's "state" entries by parameter index; TrainError when two files hold one.
std::map<int64_t, Dict> states_by_index(const std::vector<Dict>& dicts,
                                        const std::vector<OptimizerBytes>& files);
/// `state` (several files' state as one optimizer dict) into `optimizer`; TrainError saying
/// that the files (`what`) do not fit it.
void restore_merged(torch::optim::Optimizer& optimizer, const Dict& state, const std::string& what);

}  // namespace unitrain::optimizer_dict
