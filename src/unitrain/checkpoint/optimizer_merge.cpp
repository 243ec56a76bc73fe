#include "unitrain/checkpoint/optimizer_merge.h"

#include <torch/torch.h>

#include <algorithm>
#include <map>

#include "unitrain/checkpoint/optimizer_dict.h"
#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/checkpoint/torch_file.h"
#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"

namespace unitrain {
namespace {

/// The dict of an optimizer file that can be merged or re-cut (format 3, saved by parameter).
optimizer_dict::Dict partition_dict(const OptimizerFile& f) {
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
  return d;
}

/// The dicts of `files` as one: the first file's entries, with the union of every file's
/// "state" (by parameter index, in index order).
optimizer_dict::Dict merged_optimizer_dict(const std::vector<OptimizerFile>& files) {
  optimizer_dict::Dict merged = optimizer_dict::new_dict();
  std::map<int64_t, std::pair<c10::IValue, c10::IValue>> states;
  std::string first_type;
  for (const OptimizerFile& f : files) {
    const optimizer_dict::Dict d = partition_dict(f);
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

std::vector<char> reshard_optimizer_files(const std::vector<OptimizerFile>& files,
                                          const std::vector<FlatCut>& flats, int rank) {
  UT_CHECK_TRAIN(!files.empty(), "no optimizer state files to re-cut");
  std::vector<optimizer_dict::Dict> dicts;
  for (const OptimizerFile& f : files) dicts.push_back(partition_dict(f));
  optimizer_dict::Dict out = optimizer_dict::new_dict();
  for (const auto& e : dicts[0]) {
    if (e.key().toStringRef() != "state") out.insert(e.key(), e.value());
  }
  optimizer_dict::Dict state = optimizer_dict::new_dict();
  const optimizer_dict::Dict first =
      optimizer_dict::entry(dicts[0], "state", files[0].what).toGenericDict();
  for (const auto& e : first) {
    const std::string& key = e.key().toStringRef();
    size_t index = flats.size();
    try {
      index = static_cast<size_t>(std::stoll(key));
    } catch (const std::exception&) {
    }
    UT_CHECK_TRAIN(index < flats.size(), files[0].what, ": state entry '", key,
                   "' is not one of the ", flats.size(), " flats");
    const FlatCut& cut = flats[index];
    optimizer_dict::Dict entries = optimizer_dict::new_dict();
    for (const auto& field : e.value().toGenericDict()) {
      const c10::IValue& v = field.value();
      if (!v.isTensor() || v.toTensor().dim() != 1 || v.toTensor().numel() != cut.old_part) {
        entries.insert(field.key(), v);  // the step, and other per-parameter numbers: rank 0's
        continue;
      }
      std::vector<torch::Tensor> parts;
      for (size_t r = 0; r < dicts.size(); ++r) {
        const auto s = optimizer_dict::entry(dicts[r], "state", files[r].what).toGenericDict();
        const auto it = s.find(key);
        UT_CHECK_TRAIN(it != s.end(), files[r].what, " has no state of flat ", key);
        const auto f = it->value().toGenericDict().find(field.key());
        UT_CHECK_TRAIN(f != it->value().toGenericDict().end() && f->value().isTensor() &&
                           f->value().toTensor().numel() == cut.old_part,
                       files[r].what, ": flat ", key, "'s ", field.key().toStringRef(),
                       " is not a part of ", cut.old_part, " elements");
        parts.push_back(f->value().toTensor());
      }
      torch::Tensor whole = torch::cat(parts).narrow(0, 0, cut.length);
      const int64_t first_element = rank * cut.new_part;
      torch::Tensor mine = torch::zeros({cut.new_part}, whole.options());
      const int64_t n = std::max<int64_t>(0, std::min(cut.new_part, cut.length - first_element));
      if (n > 0) mine.narrow(0, 0, n).copy_(whole.narrow(0, first_element, n));
      entries.insert(field.key(), mine);
    }
    state.insert(e.key(), entries);
  }
  out.insert("state", state);
  return encode_torch_file(out).bytes();
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
