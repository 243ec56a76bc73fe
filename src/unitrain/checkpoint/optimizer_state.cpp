#include "unitrain/checkpoint/optimizer_state.h"

#include <torch/torch.h>

#include "unitrain/checkpoint/torch_file.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

namespace o = torch::optim;

std::vector<char> archive_bytes(torch::serialize::OutputArchive& archive) {
  std::vector<char> bytes;
  archive.save_to([&bytes](const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    bytes.insert(bytes.end(), p, p + size);
    return size;
  });
  return bytes;
}

using Dict = c10::impl::GenericDict;
using ReadDict = c10::impl::GenericDict;

/// A dict of string -> any value, as the files below hold.
Dict new_dict() { return Dict(c10::StringType::get(), c10::AnyType::get()); }

/// Format 3 writes each group's options as a dict (format 2: a LibTorch archive in a uint8
/// tensor); both load.
constexpr int64_t kOptimizerFormat = 3;
constexpr int64_t kArchiveOptionsFormat = 2;

/// A LibTorch archive's bytes as a uint8 tensor (to travel inside a dict).
torch::Tensor archive_tensor(torch::serialize::OutputArchive& archive) {
  std::vector<char> bytes = archive_bytes(archive);
  return torch::from_blob(bytes.data(), {static_cast<int64_t>(bytes.size())}, torch::kUInt8)
      .clone();
}

void load_archive_tensor(torch::serialize::InputArchive& archive, const torch::Tensor& t) {
  torch::Tensor bytes = t.contiguous();
  archive.load_from(static_cast<const char*>(bytes.data_ptr()), static_cast<size_t>(bytes.numel()));
}

/// The optimizer types whose state is written field by field.
std::string type_of(const o::Optimizer& optimizer) {
  if (dynamic_cast<const o::AdamW*>(&optimizer)) return "adamw";
  if (dynamic_cast<const o::Adam*>(&optimizer)) return "adam";
  if (dynamic_cast<const o::SGD*>(&optimizer)) return "sgd";
  if (dynamic_cast<const o::Adagrad*>(&optimizer)) return "adagrad";
  if (dynamic_cast<const o::RMSprop*>(&optimizer)) return "rmsprop";
  return "";
}

/// One parameter's state as a dict ("step" an int, the rest tensors; undefined ones left out).
/// Copies go into `buffers` under `prefix` when given.
Dict state_dict_of(const o::OptimizerParamState& st, bool copy, SnapshotBuffers* buffers,
                   const std::string& prefix) {
  Dict d = new_dict();
  auto put = [&](const char* name, const torch::Tensor& t) {
    if (!t.defined()) return;
    torch::Tensor v = t.detach();
    if (copy) v = buffers ? buffers->copy(prefix + name, v) : v.clone();
    d.insert(name, v);
  };
  auto adam_like = [&](const auto& a) {  // Adam's and AdamW's states have the same fields
    d.insert("step", a.step());
    put("exp_avg", a.exp_avg());
    put("exp_avg_sq", a.exp_avg_sq());
    put("max_exp_avg_sq", a.max_exp_avg_sq());
  };
  if (auto* a = dynamic_cast<const o::AdamParamState*>(&st)) {
    adam_like(*a);
  } else if (auto* w = dynamic_cast<const o::AdamWParamState*>(&st)) {
    adam_like(*w);
  } else if (auto* sgd = dynamic_cast<const o::SGDParamState*>(&st)) {
    put("momentum_buffer", sgd->momentum_buffer());
  } else if (auto* ada = dynamic_cast<const o::AdagradParamState*>(&st)) {
    d.insert("step", ada->step());
    put("sum", ada->sum());
  } else if (auto* rms = dynamic_cast<const o::RMSpropParamState*>(&st)) {
    d.insert("step", rms->step());
    put("square_avg", rms->square_avg());
    put("momentum_buffer", rms->momentum_buffer());
    put("grad_avg", rms->grad_avg());
  }
  return d;
}

/// state_dict_of's inverse for an optimizer of `type`; `param` gives shapes to check against.
std::unique_ptr<o::OptimizerParamState> state_from(const std::string& type, const ReadDict& d,
                                                   const torch::Tensor& param,
                                                   const std::string& what) {
  auto tensor = [&](const char* name, bool required) -> torch::Tensor {
    auto it = d.find(std::string(name));
    UT_CHECK_TRAIN(it != d.end() || !required, what, ": a parameter's ", type, " state has no '",
                   name, "'");
    if (it == d.end()) return {};
    UT_CHECK_TRAIN(it->value().isTensor(), what, ": '", name, "' is not a tensor");
    torch::Tensor t = it->value().toTensor();
    UT_CHECK_TRAIN(t.sizes().equals(param.sizes()), what, ": optimizer state '", name,
                   "' has shape ", t.sizes(), ", its parameter ", param.sizes(),
                   " (was it saved for another model?)");
    // Freshly read: it can be used as it is unless it is a view into a larger storage.
    torch::Tensor r = t.to(param.device(), param.scalar_type());
    return r.storage().nbytes() == r.nbytes() && r.is_contiguous() ? r : r.clone();
  };
  auto step = [&]() -> int64_t {
    auto it = d.find(std::string("step"));
    UT_CHECK_TRAIN(it != d.end() && it->value().isInt(), what, ": a parameter's ", type,
                   " state has no step count");
    return it->value().toInt();
  };
  auto adam_like = [&](auto st) {
    st->step(step()).exp_avg(tensor("exp_avg", true)).exp_avg_sq(tensor("exp_avg_sq", true));
    st->max_exp_avg_sq(tensor("max_exp_avg_sq", false));
    return std::unique_ptr<o::OptimizerParamState>(std::move(st));
  };
  if (type == "adam") return adam_like(std::make_unique<o::AdamParamState>());
  if (type == "adamw") return adam_like(std::make_unique<o::AdamWParamState>());
  if (type == "sgd") {
    auto st = std::make_unique<o::SGDParamState>();
    st->momentum_buffer(tensor("momentum_buffer", true));
    return st;
  }
  if (type == "adagrad") {
    auto st = std::make_unique<o::AdagradParamState>();
    st->step(step()).sum(tensor("sum", true));
    return st;
  }
  auto st = std::make_unique<o::RMSpropParamState>();
  st->step(step()).square_avg(tensor("square_avg", true));
  st->momentum_buffer(tensor("momentum_buffer", false)).grad_avg(tensor("grad_avg", false));
  return st;
}

c10::IValue pair(const std::tuple<double, double>& p) {
  return c10::ivalue::Tuple::create({std::get<0>(p), std::get<1>(p)});
}

/// A group's options as the dict PyTorch's optimizer.state_dict() shows (lr, betas, eps, ...).
Dict options_dict(const std::string& type, const o::OptimizerOptions& options) {
  Dict d = new_dict();
  auto adam_like = [&d](const auto& a) {
    d.insert("lr", a.lr());
    d.insert("betas", pair(a.betas()));
    d.insert("eps", a.eps());
    d.insert("weight_decay", a.weight_decay());
    d.insert("amsgrad", a.amsgrad());
  };
  if (type == "adam") adam_like(static_cast<const o::AdamOptions&>(options));
  if (type == "adamw") adam_like(static_cast<const o::AdamWOptions&>(options));
  if (type == "sgd") {
    const auto& s = static_cast<const o::SGDOptions&>(options);
    d.insert("lr", s.lr());
    d.insert("momentum", s.momentum());
    d.insert("dampening", s.dampening());
    d.insert("weight_decay", s.weight_decay());
    d.insert("nesterov", s.nesterov());
  }
  if (type == "adagrad") {
    const auto& a = static_cast<const o::AdagradOptions&>(options);
    d.insert("lr", a.lr());
    d.insert("lr_decay", a.lr_decay());
    d.insert("weight_decay", a.weight_decay());
    d.insert("initial_accumulator_value", a.initial_accumulator_value());
    d.insert("eps", a.eps());
  }
  if (type == "rmsprop") {
    const auto& r = static_cast<const o::RMSpropOptions&>(options);
    d.insert("lr", r.lr());
    d.insert("alpha", r.alpha());
    d.insert("eps", r.eps());
    d.insert("weight_decay", r.weight_decay());
    d.insert("momentum", r.momentum());
    d.insert("centered", r.centered());
  }
  return d;
}

/// options_dict's inverse: every field it writes must be there, with its type.
void load_options_dict(const std::string& type, const ReadDict& d, o::OptimizerOptions& options,
                       const std::string& what) {
  auto value = [&](const char* key) {
    auto it = d.find(std::string(key));
    UT_CHECK_TRAIN(it != d.end(), what, ": a parameter group's ", type, " options have no '", key,
                   "'");
    return it->value();
  };
  auto real = [&](const char* key) {
    const c10::IValue v = value(key);
    UT_CHECK_TRAIN(v.isDouble() || v.isInt(), what, ": option '", key, "' is not a number");
    return v.isDouble() ? v.toDouble() : static_cast<double>(v.toInt());
  };
  auto flag = [&](const char* key) {
    const c10::IValue v = value(key);
    UT_CHECK_TRAIN(v.isBool(), what, ": option '", key, "' is not true/false");
    return v.toBool();
  };
  auto adam_like = [&](auto& a) {
    const c10::IValue b = value("betas");
    UT_CHECK_TRAIN(b.isTuple() && b.toTupleRef().elements().size() == 2, what,
                   ": option 'betas' is not a pair");
    const auto& e = b.toTupleRef().elements();
    a.lr(real("lr")).betas({e[0].toDouble(), e[1].toDouble()}).eps(real("eps"));
    a.weight_decay(real("weight_decay")).amsgrad(flag("amsgrad"));
  };
  if (type == "adam") adam_like(static_cast<o::AdamOptions&>(options));
  if (type == "adamw") adam_like(static_cast<o::AdamWOptions&>(options));
  if (type == "sgd") {
    auto& s = static_cast<o::SGDOptions&>(options);
    s.lr(real("lr")).momentum(real("momentum")).dampening(real("dampening"));
    s.weight_decay(real("weight_decay")).nesterov(flag("nesterov"));
  }
  if (type == "adagrad") {
    auto& a = static_cast<o::AdagradOptions&>(options);
    a.lr(real("lr")).lr_decay(real("lr_decay")).weight_decay(real("weight_decay"));
    a.initial_accumulator_value(real("initial_accumulator_value")).eps(real("eps"));
  }
  if (type == "rmsprop") {
    auto& r = static_cast<o::RMSpropOptions&>(options);
    r.lr(real("lr")).alpha(real("alpha")).eps(real("eps")).weight_decay(real("weight_decay"));
    r.momentum(real("momentum")).centered(flag("centered"));
  }
}

std::string state_key(const torch::Tensor& param) {
  return c10::guts::to_string(param.unsafeGetTensorImpl());
}

/// The optimizer as the dict save_optimizer_state describes; state tensors copied with `copy`.
Dict optimizer_dict(const o::Optimizer& optimizer, bool copy, SnapshotBuffers* buffers) {
  Dict out = new_dict();
  out.insert("format", kOptimizerFormat);
  const std::string type = type_of(optimizer);
  out.insert("type", type);
  if (type.empty()) {
    torch::serialize::OutputArchive archive;
    optimizer.save(archive);
    out.insert("archive", archive_tensor(archive));
    return out;
  }
  c10::impl::GenericList groups(c10::AnyType::get());
  Dict state = new_dict();
  int64_t index = 0;
  for (const auto& group : optimizer.param_groups()) {
    Dict g = new_dict();
    g.insert("params", static_cast<int64_t>(group.params().size()));
    g.insert("options", options_dict(type, group.options()));
    groups.push_back(g);
    for (const auto& p : group.params()) {
      auto it = optimizer.state().find(state_key(p));
      if (it != optimizer.state().end()) {
        state.insert(std::to_string(index),
                     state_dict_of(*it->second, copy, buffers,
                                   "optimizer/" + std::to_string(index) + "/"));
      }
      ++index;
    }
  }
  out.insert("groups", groups);
  out.insert("state", state);
  return out;
}

/// The optimizer file of an earlier format: LibTorch's archive with the options beside it.
void load_legacy_optimizer_state(o::Optimizer& optimizer, const std::vector<char>& bytes,
                                 const std::string& what) {
  torch::serialize::InputArchive archive;
  archive.load_from(bytes.data(), bytes.size());
  torch::Tensor size;
  archive.read("groups/size", size);
  auto& groups = optimizer.param_groups();
  UT_CHECK_TRAIN(size.item<int64_t>() == static_cast<int64_t>(groups.size()), what, " has ",
                 size.item<int64_t>(), " parameter groups, the optimizer ", groups.size());
  torch::serialize::InputArchive state;
  archive.read("optimizer", state);
  optimizer.load(state);
  for (size_t i = 0; i < groups.size(); ++i) {
    torch::serialize::InputArchive options;
    archive.read("groups/" + std::to_string(i), options);
    groups[i].options().serialize(options);
  }
}

c10::IValue entry(const ReadDict& d, const char* key, const std::string& what) {
  auto it = d.find(std::string(key));
  UT_CHECK_TRAIN(it != d.end(), what, " has no '", key, "' entry");
  return it->value();
}

void load_optimizer_dict(o::Optimizer& optimizer, const ReadDict& d, int64_t format,
                         const std::string& what) {
  const std::string type = entry(d, "type", what).toStringRef();
  const std::string own = type_of(optimizer);
  UT_CHECK_TRAIN(type == own, what, " holds the state of optimizer type '",
                 type.empty() ? "custom" : type, "', this run's optimizer is '",
                 own.empty() ? "custom" : own, "'");
  if (type.empty()) {
    torch::serialize::InputArchive archive;
    load_archive_tensor(archive, entry(d, "archive", what).toTensor());
    optimizer.load(archive);
    return;
  }
  auto groups = entry(d, "groups", what).toList();
  auto& own_groups = optimizer.param_groups();
  UT_CHECK_TRAIN(groups.size() == own_groups.size(), what, " has ", groups.size(),
                 " parameter groups, the optimizer ", own_groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    const ReadDict g = groups.get(i).toGenericDict();
    const int64_t n = entry(g, "params", what).toInt();
    UT_CHECK_TRAIN(n == static_cast<int64_t>(own_groups[i].params().size()), what,
                   ": parameter group ", i, " has ", n, " parameters, the optimizer's ",
                   own_groups[i].params().size());
  }
  const ReadDict state = entry(d, "state", what).toGenericDict();
  // Everything is checked before anything changes.
  std::vector<std::pair<std::string, std::unique_ptr<o::OptimizerParamState>>> loaded;
  int64_t index = 0;
  for (const auto& group : own_groups) {
    for (const auto& p : group.params()) {
      auto it = state.find(c10::IValue(std::to_string(index++)));
      if (it == state.end()) continue;
      loaded.emplace_back(state_key(p), state_from(type, it->value().toGenericDict(), p, what));
    }
  }
  optimizer.state().clear();
  for (auto& [key, st] : loaded) optimizer.state()[key] = std::move(st);
  for (size_t i = 0; i < groups.size(); ++i) {
    const ReadDict g = groups.get(i).toGenericDict();
    if (format == kArchiveOptionsFormat) {
      torch::serialize::InputArchive options;
      load_archive_tensor(options, entry(g, "options", what).toTensor());
      own_groups[i].options().serialize(options);
    } else {
      const c10::IValue options = entry(g, "options", what);
      UT_CHECK_TRAIN(options.isGenericDict(), what, ": parameter group ", i,
                     "'s options are not a dict");
      load_options_dict(type, options.toGenericDict(), own_groups[i].options(), what);
    }
  }
}

}  // namespace

std::vector<char> save_optimizer_state(const torch::optim::Optimizer& optimizer) {
  return encode_torch_file(optimizer_dict(optimizer, /*copy=*/false, nullptr)).bytes();
}

std::function<FileImage()> optimizer_state_snapshot(const torch::optim::Optimizer& optimizer,
                                                    bool copy, SnapshotBuffers* buffers) {
  auto dict = std::make_shared<Dict>(optimizer_dict(optimizer, copy, buffers));
  return [dict] { return encode_torch_file(*dict); };
}

void load_optimizer_state(torch::optim::Optimizer& optimizer, const std::vector<char>& bytes,
                          const std::string& what) {
  try {
    c10::IValue value;
    try {
      value = torch::pickle_load(bytes);
    } catch (const std::exception&) {
      // not a pickled dict: an optimizer file of the first format
    }
    if (value.isGenericDict()) {
      const ReadDict d = value.toGenericDict();
      const c10::IValue format = d.contains(std::string("format")) ? d.at(std::string("format"))
                                                                   : c10::IValue();
      UT_CHECK_TRAIN(format.isInt() && (format.toInt() == kOptimizerFormat ||
                                        format.toInt() == kArchiveOptionsFormat),
                     what, " is not an optimizer state this version of unitrain reads");
      load_optimizer_dict(optimizer, d, format.toInt(), what);
    } else {
      load_legacy_optimizer_state(optimizer, bytes, what);
    }
  } catch (const TrainError&) {
    throw;
  } catch (const std::exception& e) {
    throw TrainError(detail::concat(what, " does not fit this optimizer (was it saved by another "
                                          "optimizer type or model?): ",
                                    std::string(e.what()).substr(0, 300)));
  }
}

}  // namespace unitrain
