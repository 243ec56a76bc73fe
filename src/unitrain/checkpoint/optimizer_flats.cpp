// distributed.zero: 3's optimizer files (optimizer_merge.h): each rank's state of its parts of
// the flats, re-cut to another world size, read by parameter (a run without ZeRO 3), or made
// from a state by parameter (a ZeRO 3 run from a checkpoint without it).
#include <torch/torch.h>

#include <algorithm>
#include <map>

#include "unitrain/checkpoint/model_shards.h"
#include "unitrain/checkpoint/optimizer_dict.h"
#include "unitrain/checkpoint/optimizer_merge.h"
#include "unitrain/checkpoint/torch_file.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

/// Elements [start, start + out.numel()) of flat `key`'s state entry `field`, whose parts (of
/// `part` elements) are the files' in order, copied into `out`: only those elements are read.
void copy_flat_state(const std::vector<optimizer_dict::Dict>& dicts,
                     const std::vector<OptimizerBytes>& files, const std::string& key,
                     const c10::IValue& field, int64_t part, int64_t start, torch::Tensor out) {
  std::vector<torch::Tensor> parts;
  for (size_t r = 0; r < dicts.size(); ++r) {
    const auto s = optimizer_dict::entry(dicts[r], "state", files[r].what).toGenericDict();
    const auto it = s.find(key);
    UT_CHECK_TRAIN(it != s.end(), files[r].what, " has no state of flat ", key);
    const auto f = it->value().toGenericDict().find(field);
    UT_CHECK_TRAIN(f != it->value().toGenericDict().end() && f->value().isTensor() &&
                       f->value().toTensor().numel() == part,
                   files[r].what, ": flat ", key, "'s ", field.toStringRef(), " is not a part of ",
                   part, " elements");
    parts.push_back(f->value().toTensor());
  }
  copy_flat_range(parts, part, start, out);
}

/// A flat's state entry that is a part of its elements (the moments), not a number (the step).
bool is_part(const c10::IValue& v, int64_t part) {
  return v.isTensor() && v.toTensor().dim() == 1 && v.toTensor().numel() == part;
}

/// Whether two entries of a state that is not by element (the step) are the same.
bool same_entry(const c10::IValue& a, const c10::IValue& b) {
  if (a.isTensor() || b.isTensor()) {
    return a.isTensor() && b.isTensor() && a.toTensor().sizes() == b.toTensor().sizes() &&
           torch::equal(a.toTensor(), b.toTensor());
  }
  return a == b;
}

/// `rank`'s part of `flat`'s state, from its members' states by parameter (`member_states`, in
/// member order); `what` names the files.
optimizer_dict::Dict flat_part_state(const ShardLayout::Flat& flat,
                                     const std::vector<optimizer_dict::Dict>& member_states,
                                     int rank, const std::string& what) {
  const optimizer_dict::Dict& first = member_states[0];
  bool all_scalars = true;
  for (const auto& m : flat.members) all_scalars = all_scalars && m.shape.empty();
  const int64_t begin = rank * flat.part;
  optimizer_dict::Dict entries = optimizer_dict::new_dict();
  for (const auto& field : first) {
    std::vector<c10::IValue> values;
    bool by_element = !all_scalars;
    for (size_t i = 0; i < flat.members.size(); ++i) {
      const auto it = member_states[i].find(field.key());
      UT_CHECK_TRAIN(it != member_states[i].end(), what, ": parameter ", flat.members[i].name,
                     "'s optimizer state has no '", field.key().toStringRef(), "', ",
                     flat.members[0].name, "'s has");
      values.push_back(it->value());
      by_element = by_element && it->value().isTensor() &&
                   it->value().toTensor().sizes() == c10::IntArrayRef(flat.members[i].shape);
    }
    if (!by_element) {  // the step, other numbers: one for the flat
      for (size_t i = 1; i < values.size(); ++i) {
        UT_CHECK_TRAIN(same_entry(values[0], values[i]), what, ": parameters ",
                       flat.members[0].name, " and ", flat.members[i].name,
                       " were stepped differently ('", field.key().toStringRef(),
                       "'), but distributed.zero: 3 steps them as one flat");
      }
      const c10::IValue& v = values[0];
      entries.insert(field.key(), v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
      continue;
    }
    torch::Tensor mine = torch::zeros({flat.part}, values[0].toTensor().options());
    for (size_t i = 0; i < flat.members.size(); ++i) {
      const torch::Tensor t = values[i].toTensor().reshape({-1});
      const int64_t from = std::max(begin, flat.members[i].offset);
      const int64_t to = std::min(begin + flat.part, flat.members[i].offset + t.numel());
      if (from >= to) continue;
      mine.narrow(0, from - begin, to - from)
          .copy_(t.narrow(0, from - flat.members[i].offset, to - from));
    }
    entries.insert(field.key(), mine);
  }
  return entries;
}

}  // namespace

std::vector<char> unflatten_optimizer_files(
    const std::vector<OptimizerBytes>& files, const ShardLayout& layout,
    const std::vector<std::vector<std::string>>& group_names) {
  optimizer_dict::Dict out = optimizer_dict::new_dict();
  const std::vector<optimizer_dict::Dict> dicts =
      optimizer_dict::partition_dicts(files, out, false);
  const std::string& what = files[0].what;
  // The saved state's index of each flat: its position counted over the optimizer's groups.
  struct Place {
    size_t flat;
    int64_t index;
    const ShardLayout::Member* member;
  };
  std::map<std::string, Place> places;
  int64_t index = 0;
  for (size_t g = 0; g < group_names.size(); ++g) {
    for (size_t f = 0; f < layout.flats.size(); ++f) {
      if (layout.flats[f].key != static_cast<int>(g)) continue;
      for (const auto& m : layout.flats[f].members) places[m.name] = {f, index, &m};
      ++index;
    }
  }
  const c10::List<c10::IValue> saved_groups =
      optimizer_dict::entry(dicts[0], "groups", what).toList();
  UT_CHECK_TRAIN(saved_groups.size() == group_names.size(), what, " holds ", saved_groups.size(),
                 " parameter groups, this optimizer has ", group_names.size());
  const optimizer_dict::Dict saved_state =
      optimizer_dict::entry(dicts[0], "state", what).toGenericDict();
  c10::impl::GenericList groups(c10::AnyType::get());
  optimizer_dict::Dict state = optimizer_dict::new_dict();
  int64_t param = 0;
  for (size_t g = 0; g < group_names.size(); ++g) {
    optimizer_dict::Dict group = optimizer_dict::new_dict();
    group.insert("params", static_cast<int64_t>(group_names[g].size()));
    group.insert("options",
                 optimizer_dict::entry(saved_groups.get(g).toGenericDict(), "options", what));
    groups.push_back(group);
    for (const std::string& name : group_names[g]) {
      const auto place = places.find(name);
      UT_CHECK_TRAIN(place != places.end(), what, " holds no state of parameter ", name,
                     " in optimizer group ", g, " (the run saved it with other units or groups)");
      const ShardLayout::Flat& flat = layout.flats[place->second.flat];
      UT_CHECK_TRAIN(flat.key == static_cast<int>(g), what, " holds parameter ", name,
                     "'s state in optimizer group ", flat.key, ", this optimizer has it in group ",
                     g, " (optimizer.no_decay_bias_norm changed?)");
      const ShardLayout::Member& m = *place->second.member;
      const std::string key = std::to_string(place->second.index);
      const auto saved = saved_state.find(key);
      if (saved == saved_state.end()) {  // not stepped yet: no state
        ++param;
        continue;
      }
      int64_t numel = 1;
      for (int64_t d : m.shape) numel *= d;
      optimizer_dict::Dict entries = optimizer_dict::new_dict();
      for (const auto& field : saved->value().toGenericDict()) {
        if (!is_part(field.value(), flat.part)) {
          entries.insert(field.key(), field.value());
          continue;
        }
        torch::Tensor mine = torch::empty({numel}, field.value().toTensor().options());
        copy_flat_state(dicts, files, key, field.key(), flat.part, m.offset, mine);
        entries.insert(field.key(), mine.view(m.shape));
      }
      state.insert(std::to_string(param++), entries);
    }
  }
  out.insert("groups", groups);
  out.insert("state", state);
  return encode_torch_file(out).bytes();
}

void load_resharded_optimizer_state(torch::optim::Optimizer& optimizer,
                                    const std::vector<OptimizerBytes>& files,
                                    const std::vector<FlatCut>& flats, int rank,
                                    const std::string& what) {
  optimizer_dict::Dict out = optimizer_dict::new_dict();
  const std::vector<optimizer_dict::Dict> dicts = optimizer_dict::partition_dicts(files, out, true);
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
      if (!is_part(field.value(), cut.old_part)) {  // the step, other numbers: rank 0's, owned
        // (a tensor decoded from a mapped file is a view of it, read-only)
        const c10::IValue& v = field.value();
        entries.insert(field.key(), v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
        continue;
      }
      const int64_t first_element = rank * cut.new_part;
      torch::Tensor mine = torch::zeros({cut.new_part}, field.value().toTensor().options());
      const int64_t n = std::max<int64_t>(0, std::min(cut.new_part, cut.length - first_element));
      if (n > 0) {
        copy_flat_state(dicts, files, key, field.key(), cut.old_part, first_element,
                        mine.narrow(0, 0, n));
      }
      entries.insert(field.key(), mine);
    }
    state.insert(e.key(), entries);
  }
  out.insert("state", state);
  optimizer_dict::restore_merged(optimizer, out, what);
}

void load_flattened_optimizer_state(torch::optim::Optimizer& optimizer,
                                    const std::vector<OptimizerBytes>& files,
                                    const ShardLayout& layout,
                                    const std::vector<std::string>& model_order, int rank,
                                    const std::string& what) {
  optimizer_dict::Dict out = optimizer_dict::new_dict();
  const std::vector<optimizer_dict::Dict> dicts =
      optimizer_dict::partition_dicts(files, out, false);
  const std::map<int64_t, optimizer_dict::Dict> saved =
      optimizer_dict::states_by_index(dicts, files);
  const c10::List<c10::IValue> saved_groups =
      optimizer_dict::entry(dicts[0], "groups", files[0].what).toList();
  const size_t groups_count = optimizer.param_groups().size();
  UT_CHECK_TRAIN(saved_groups.size() == groups_count, files[0].what, " holds ", saved_groups.size(),
                 " parameter groups, this optimizer has ", groups_count,
                 " (optimizer.no_decay_bias_norm changed?)");
  std::map<std::string, int> key_of;  // each trained member's group
  for (const auto& flat : layout.flats) {
    for (const auto& m : flat.members) key_of[m.name] = flat.key;
  }
  // The saved index of each trained member: its place in its group, the groups in order.
  std::map<std::string, int64_t> index_of;
  int64_t base = 0;
  for (size_t g = 0; g < groups_count; ++g) {
    int64_t count = 0;
    for (const std::string& name : model_order) {
      const auto key = key_of.find(name);
      if (key != key_of.end() && key->second == static_cast<int>(g))
        index_of[name] = base + count++;
    }
    const c10::IValue params =
        optimizer_dict::entry(saved_groups.get(g).toGenericDict(), "params", files[0].what);
    UT_CHECK_TRAIN(params.isInt() && params.toInt() == count, files[0].what, "'s optimizer group ",
                   g, " trains ", params.isInt() ? params.toInt() : -1, " parameters, this run's ",
                   count, " (other parameters trained, or optimizer.no_decay_bias_norm changed?)");
    base += count;
  }
  c10::impl::GenericList groups(c10::AnyType::get());
  optimizer_dict::Dict state = optimizer_dict::new_dict();
  int64_t flat_index = 0;  // the flats counted over the groups, as the optimizer holds them
  for (size_t g = 0; g < groups_count; ++g) {
    int64_t count = 0;
    for (const auto& flat : layout.flats) {
      if (flat.key != static_cast<int>(g)) continue;
      std::vector<optimizer_dict::Dict> member_states;
      for (const auto& m : flat.members) {
        const auto it = saved.find(index_of.at(m.name));
        if (it != saved.end()) member_states.push_back(it->second);
      }
      UT_CHECK_TRAIN(member_states.empty() || member_states.size() == flat.members.size(), what,
                     ": some parameters of ", flat.members[0].name,
                     "'s unit have optimizer state and some not, but distributed.zero: 3 "
                     "steps them as one flat");
      if (!member_states.empty()) {
        state.insert(std::to_string(flat_index), flat_part_state(flat, member_states, rank, what));
      }
      ++flat_index;
      ++count;
    }
    optimizer_dict::Dict group = optimizer_dict::new_dict();
    group.insert("params", count);
    group.insert("options", optimizer_dict::entry(saved_groups.get(g).toGenericDict(), "options",
                                                  files[0].what));
    groups.push_back(group);
  }
  out.insert("groups", groups);
  out.insert("state", state);
  optimizer_dict::restore_merged(optimizer, out, what);
}

}  // namespace unitrain
