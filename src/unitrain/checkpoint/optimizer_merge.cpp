#include "unitrain/checkpoint/optimizer_merge.h"

#include <torch/torch.h>

#include <map>

#include "unitrain/checkpoint/optimizer_dict.h"
#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/checkpoint/torch_file.h"
#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"

namespace unitrain {
namespace {

/// The dicts of `files` as one: the first file's entries, with the union of every file's
/// "state" (by parameter index, in index order).
optimizer_dict::Dict merged_optimizer_dict(const std::vector<OptimizerFile>& files) {
  optimizer_dict::Dict merged = optimizer_dict::new_dict();
  std::map<int64_t, std::pair<c10::IValue, c10::IValue>> states;
  std::string first_type;
  for (const OptimizerFile& f : files) {
    c10::IValue value;
    try {
      value = torch::pickle_load(f.bytes);
    } catch (const std::exception& e) {
      throw TrainError(
          detail::concat(f.what, " is not an optimizer state file: ", error_text(e, 200)));
    }
    UT_CHECK_TRAIN(value.isGenericDict(), f.what, " is not an optimizer state file");
    const optimizer_dict::Dict d = value.toGenericDict();
    auto format = d.find(std::string("format"));
    UT_CHECK_TRAIN(format != d.end() && format->value().isInt() &&
                       format->value().toInt() == optimizer_dict::kOptimizerFormat,
                   f.what, " is not a partition of an optimizer state this unitrain reads");
    const std::string type = optimizer_dict::entry(d, "type", f.what).toStringRef();
    UT_CHECK_TRAIN(!type.empty(), f.what,
                   ": the state of an optimizer unitrain cannot save by "
                   "parameter cannot be merged from several files");
    if (first_type.empty()) {
      first_type = type;
      for (const auto& e : d) {
        if (e.key().toStringRef() != "state") merged.insert(e.key(), e.value());
      }
    } else {
      UT_CHECK_TRAIN(first_type == type, f.what, " holds the state of optimizer type '", type,
                     "', ", files[0].what, " '", first_type, "'");
    }
    for (const auto& e : optimizer_dict::entry(d, "state", f.what).toGenericDict()) {
      const std::string& key = e.key().toStringRef();
      int64_t index = -1;
      try {
        index = std::stoll(key);
      } catch (const std::exception&) {
      }
      UT_CHECK_TRAIN(index >= 0, f.what, ": state entry '", key, "' is not a parameter index");
      UT_CHECK_TRAIN(states.count(index) == 0, f.what, " holds parameter ", key,
                     "'s state, which an earlier file holds too");
      states.emplace(index, std::make_pair(e.key(), e.value()));
    }
  }
  optimizer_dict::Dict state = optimizer_dict::new_dict();
  for (const auto& [index, kv] : states) state.insert(kv.first, kv.second);
  merged.insert("state", state);
  return merged;
}

}  // namespace

std::vector<char> merge_optimizer_files(const std::vector<OptimizerFile>& files) {
  UT_CHECK_TRAIN(!files.empty(), "no optimizer state files to merge");
  return encode_torch_file(merged_optimizer_dict(files)).bytes();
}

void load_optimizer_state(torch::optim::Optimizer& optimizer, std::vector<OptimizerFile> files) {
  UT_CHECK_TRAIN(!files.empty(), "no optimizer state files to load");
  if (files.size() == 1) {
    return load_optimizer_state(optimizer, std::move(files[0].bytes), files[0].what);
  }
  const std::string what = files[0].what + " and " + std::to_string(files.size() - 1) + " more";
  const optimizer_dict::Dict merged = merged_optimizer_dict(files);
  try {
    optimizer_dict::restore(optimizer, merged, optimizer_dict::kOptimizerFormat, what);
  } catch (const TrainError&) {
    throw;
  } catch (const std::exception& e) {
    throw TrainError(detail::concat(what, " do not fit this optimizer: ", error_text(e)));
  }
}

}  // namespace unitrain
