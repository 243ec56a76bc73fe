#pragma once
// The dict an optimizer file holds (optimizer_state.h describes it): what optimizer_state.cpp,
// which writes and restores it, and optimizer_merge.cpp, which merges ZeRO partitions of it,
// share. Private to those two files.
#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <string>

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

}  // namespace unitrain::optimizer_dict
