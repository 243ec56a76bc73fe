#include "unitrain/checkpoint/optimizer_merge.h"

#include <torch/torch.h>

#include <map>

#include "unitrain/checkpoint/optimizer_dict.h"
#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/checkpoint/torch_file.h"
#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"

namespace unitrain {
namespace optimizer_dict {

/// The dict of an optimizer file that can be merged or re-cut (format 3, saved by parameter),
/// its tensors in place in the file's bytes.
Dict partition_dict(const OptimizerBytes& f) {
  c10::IValue value;
  try {
    value = decode_torch_file(f.data, f.size, f.keep, f.what);
  } catch (const std::exception& e) {
    throw TrainError(
        detail::concat(f.what, " is not an optimizer state file: ", error_text(e, 200)));
  }
  UT_CHECK_TRAIN(value.isGenericDict(), f.what, " is not an optimizer state file");
  const Dict d = value.toGenericDict();
  auto format = d.find(std::string("format"));
  UT_CHECK_TRAIN(
      format != d.end() && format->value().isInt() && format->value().toInt() == kOptimizerFormat,
      f.what, " is not a partition of an optimizer state this unitrain reads");
  return d;
}

/// The files' dicts, and their entries but "state" (and "groups" unless `with_groups`).
std::vector<Dict> partition_dicts(const std::vector<OptimizerBytes>& files, Dict& head,
                                  bool with_groups) {
  UT_CHECK_TRAIN(!files.empty(), "no optimizer state files to re-cut");
  std::vector<Dict> dicts;
  for (const OptimizerBytes& f : files) dicts.push_back(partition_dict(f));
  for (const auto& e : dicts[0]) {
    const std::string& k = e.key().toStringRef();
    if (k != "state" && (with_groups || k != "groups")) head.insert(e.key(), e.value());
  }
  return dicts;
}

/// Every file's "state" entries by parameter index; TrainError when two files hold one.
std::map<int64_t, Dict> states_by_index(const std::vector<Dict>& dicts,
                                        const std::vector<OptimizerBytes>& files) {
  std::map<int64_t, Dict> out;
  for (size_t r = 0; r < dicts.size(); ++r) {
    for (const auto& e : entry(dicts[r], "state", files[r].what).toGenericDict()) {
      const std::string& key = e.key().toStringRef();
      int64_t index = -1;
      try {
        index = std::stoll(key);
      } catch (const std::exception&) {
      }
      UT_CHECK_TRAIN(index >= 0, files[r].what, ": state entry '", key,
                     "' is not a parameter index");
      UT_CHECK_TRAIN(out.emplace(index, e.value().toGenericDict()).second, files[r].what,
                     " holds parameter ", key, "'s state, which an earlier file holds too");
    }
  }
  return out;
}

/// `state` (several files' state as one optimizer dict) into `optimizer`; TrainError saying that
/// the files (`what`) do not fit it.
void restore_merged(torch::optim::Optimizer& optimizer, const Dict& state,
                    const std::string& what) {
  try {
    restore(optimizer, state, kOptimizerFormat, what);
  } catch (const TrainError&) {
    throw;
  } catch (const std::exception& e) {
    throw TrainError(detail::concat(what, " do not fit this optimizer: ", error_text(e)));
  }
}

}  // namespace optimizer_dict

namespace {

/// The dicts of `files` as one: the first file's entries, with the union of every file's
/// "state" (by parameter index, in index order).
optimizer_dict::Dict merged_optimizer_dict(const std::vector<OptimizerFile>& files) {
  std::vector<OptimizerBytes> bytes;
  for (const OptimizerFile& file : files)
    bytes.push_back(OptimizerBytes::of(file.bytes, file.what));
  optimizer_dict::Dict merged = optimizer_dict::new_dict();
  const std::vector<optimizer_dict::Dict> dicts =
      optimizer_dict::partition_dicts(bytes, merged, /*with_groups=*/true);
  const std::string first_type =
      optimizer_dict::entry(dicts[0], "type", bytes[0].what).toStringRef();
  for (size_t r = 0; r < dicts.size(); ++r) {
    const std::string type = optimizer_dict::entry(dicts[r], "type", bytes[r].what).toStringRef();
    UT_CHECK_TRAIN(!type.empty(), bytes[r].what,
                   ": the state of an optimizer unitrain cannot save by "
                   "parameter cannot be merged from several files");
    UT_CHECK_TRAIN(first_type == type, bytes[r].what, " holds the state of optimizer type '", type,
                   "', ", bytes[0].what, " '", first_type, "'");
  }
  optimizer_dict::Dict state = optimizer_dict::new_dict();
  for (const auto& [index, entries] : optimizer_dict::states_by_index(dicts, bytes)) {
    state.insert(std::to_string(index), entries);
  }
  merged.insert("state", state);
  return merged;
}

}  // namespace

OptimizerBytes OptimizerBytes::of(std::vector<char> bytes, std::string what) {
  auto shared = std::make_shared<const std::vector<char>>(std::move(bytes));
  return {shared->data(), shared->size(), shared, std::move(what)};
}

OptimizerBytes OptimizerBytes::of(const MappedFile& file, std::string what) {
  return {reinterpret_cast<const char*>(file.data()), file.size(), file.keepalive(),
          std::move(what)};
}

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
  optimizer_dict::restore_merged(optimizer, merged_optimizer_dict(files), what);
}

}  // namespace unitrain
