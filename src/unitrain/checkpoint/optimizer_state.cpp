#include "unitrain/checkpoint/optimizer_state.h"

#include <torch/torch.h>

#include "unitrain/checkpoint/optimizer_dict.h"
#include "unitrain/checkpoint/torch_file.h"
#include "unitrain/compat/optimizer_state_key.h"
#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/optimizer_state_serializer.h"

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

using optimizer_dict::Dict;
using ReadDict = optimizer_dict::Dict;
using optimizer_dict::entry;
using optimizer_dict::kArchiveOptionsFormat;
using optimizer_dict::kOptimizerFormat;
using optimizer_dict::new_dict;

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

/// A serializer's StateWriter: entries into a dict, tensors detached and on the CPU (copied with
/// `copy`, into `buffers` under `prefix` when given; without `copy`, a device's tensor is copied
/// to the CPU and a CPU tensor taken as it is).
class DictWriter : public StateWriter {
 public:
  DictWriter(bool copy = false, SnapshotBuffers* buffers = nullptr, std::string prefix = "")
      : copy_(copy), buffers_(buffers), prefix_(std::move(prefix)) {}

  void tensor(const std::string& name, const torch::Tensor& t) override {
    if (!t.defined()) return;  // as a missing required entry, it fails the load, not the save
    torch::Tensor v = t.detach();
    if (copy_) {
      v = buffers_ ? buffers_->copy(prefix_ + name, v) : v.to(torch::kCPU, false, /*copy=*/true);
    } else {
      v = v.to(torch::kCPU);
    }
    dict_.insert(name, v);
  }
  void optional_tensor(const std::string& name, const torch::Tensor& t) override {
    tensor(name, t);
  }
  void integer(const std::string& name, int64_t v) override { dict_.insert(name, v); }
  void real(const std::string& name, double v) override { dict_.insert(name, v); }
  void flag(const std::string& name, bool v) override { dict_.insert(name, v); }
  void pair(const std::string& name, const std::tuple<double, double>& v) override {
    dict_.insert(name, c10::ivalue::Tuple::create({std::get<0>(v), std::get<1>(v)}));
  }
  const Dict& dict() const { return dict_; }

 private:
  bool copy_;
  SnapshotBuffers* buffers_;
  std::string prefix_;
  Dict dict_ = new_dict();
};

/// A serializer's StateReader over one dict of the file `what`: a parameter's state (`param`
/// gives the shape its tensors must have) or, without `param`, a parameter group's options.
/// `whose` starts the message for a missing entry, e.g. "a parameter's adam state has".
class DictReader : public StateReader {
 public:
  DictReader(ReadDict d, std::string whose, const torch::Tensor* param, std::string what)
      : dict_(std::move(d)), whose_(std::move(whose)), param_(param), what_(std::move(what)) {}

  void tensor(const std::string& name, torch::Tensor& value) override {
    value = read_tensor(name, /*required=*/true);
  }
  void optional_tensor(const std::string& name, torch::Tensor& value) override {
    value = read_tensor(name, /*required=*/false);
  }
  void integer(const std::string& name, int64_t& value) override {
    auto it = dict_.find(name);
    UT_CHECK_TRAIN(it != dict_.end() && it->value().isInt(), what_, ": ", whose_, " no ", name,
                   " count");
    value = it->value().toInt();
  }
  void real(const std::string& name, double& value) override {
    const c10::IValue v = entry(name);
    UT_CHECK_TRAIN(v.isDouble() || v.isInt(), what_, ": option '", name, "' is not a number");
    value = v.isDouble() ? v.toDouble() : static_cast<double>(v.toInt());
  }
  void flag(const std::string& name, bool& value) override {
    const c10::IValue v = entry(name);
    UT_CHECK_TRAIN(v.isBool(), what_, ": option '", name, "' is not true/false");
    value = v.toBool();
  }
  void pair(const std::string& name, std::tuple<double, double>& value) override {
    const c10::IValue v = entry(name);
    UT_CHECK_TRAIN(v.isTuple() && v.toTupleRef().elements().size() == 2, what_, ": option '", name,
                   "' is not a pair");
    const auto& e = v.toTupleRef().elements();
    value = {e[0].toDouble(), e[1].toDouble()};
  }

 private:
  c10::IValue entry(const std::string& name) const {
    auto it = dict_.find(name);
    UT_CHECK_TRAIN(it != dict_.end(), what_, ": ", whose_, " no '", name, "'");
    return it->value();
  }

  torch::Tensor read_tensor(const std::string& name, bool required) const {
    auto it = dict_.find(name);
    UT_CHECK_TRAIN(it != dict_.end() || !required, what_, ": ", whose_, " no '", name, "'");
    if (it == dict_.end()) return {};
    UT_CHECK_TRAIN(it->value().isTensor(), what_, ": '", name, "' is not a tensor");
    torch::Tensor t = it->value().toTensor();
    if (param_ == nullptr) return t;
    UT_CHECK_TRAIN(t.sizes().equals(param_->sizes()), what_, ": optimizer state '", name,
                   "' has shape ", t.sizes(), ", its parameter ", param_->sizes(),
                   " (was it saved for another model?)");
    // Freshly read: it can be used as it is unless it is a view into a larger storage.
    torch::Tensor r = t.to(param_->device(), param_->scalar_type());
    return r.storage().nbytes() == r.nbytes() && r.is_contiguous() ? r : r.clone();
  }

  ReadDict dict_;
  std::string whose_;
  const torch::Tensor* param_;
  std::string what_;
};

/// The optimizer as the dict save_optimizer_state describes; state tensors copied with `copy`.
Dict optimizer_as_dict(const o::Optimizer& optimizer, bool copy, SnapshotBuffers* buffers) {
  Dict out = new_dict();
  out.insert("format", kOptimizerFormat);
  const OptimizerStateSerializer* serializer = optimizer_state_serializers::find(optimizer);
  out.insert("type", serializer ? serializer->type : std::string());
  if (serializer == nullptr) {
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
    DictWriter options;
    serializer->save_options(group.options(), options);
    g.insert("options", options.dict());
    groups.push_back(g);
    for (const auto& p : group.params()) {
      auto it = optimizer.state().find(optimizer_state_key(p));
      if (it != optimizer.state().end()) {
        DictWriter param_state(copy, buffers, "optimizer/" + std::to_string(index) + "/");
        serializer->save_state(*it->second, param_state);
        state.insert(std::to_string(index), param_state.dict());
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

}  // namespace

void optimizer_dict::restore(o::Optimizer& optimizer, const ReadDict& d, int64_t format,
                             const std::string& what) {
  const std::string type = entry(d, "type", what).toStringRef();
  const OptimizerStateSerializer* serializer = optimizer_state_serializers::find(optimizer);
  const std::string own = serializer ? serializer->type : "";
  UT_CHECK_TRAIN(type == own, what, " holds the state of optimizer type '",
                 type.empty() ? "custom" : type, "', this run's optimizer is '",
                 own.empty() ? "custom" : own, "'");
  if (serializer == nullptr) {
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
  std::vector<std::pair<OptimizerStateMap::key_type, std::unique_ptr<o::OptimizerParamState>>>
      loaded;
  int64_t index = 0;
  for (const auto& group : own_groups) {
    for (const auto& p : group.params()) {
      auto it = state.find(c10::IValue(std::to_string(index++)));
      if (it == state.end()) continue;
      DictReader param_state(it->value().toGenericDict(), "a parameter's " + type + " state has",
                             &p, what);
      loaded.emplace_back(optimizer_state_key(p), serializer->load_state(param_state));
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
      DictReader reader(options.toGenericDict(), "a parameter group's " + type + " options have",
                        nullptr, what);
      serializer->load_options(reader, own_groups[i].options());
    }
  }
}

int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer) {
  const OptimizerStateSerializer* serializer = optimizer_state_serializers::find(optimizer);
  if (serializer == nullptr) return -1;
  struct ByteCounter : StateWriter {
    int64_t bytes = 0;
    void tensor(const std::string&, const torch::Tensor& t) override {
      if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
    }
    void optional_tensor(const std::string& n, const torch::Tensor& t) override { tensor(n, t); }
    void integer(const std::string&, int64_t) override {}
    void real(const std::string&, double) override {}
    void flag(const std::string&, bool) override {}
    void pair(const std::string&, const std::tuple<double, double>&) override {}
  } counter;
  for (const auto& [key, state] : optimizer.state()) serializer->save_state(*state, counter);
  return counter.bytes;
}

std::vector<char> save_optimizer_state(const torch::optim::Optimizer& optimizer) {
  return encode_torch_file(optimizer_as_dict(optimizer, /*copy=*/false, nullptr)).bytes();
}

std::function<FileImage()> optimizer_state_snapshot(const torch::optim::Optimizer& optimizer,
                                                    bool copy, SnapshotBuffers* buffers) {
  auto dict = std::make_shared<Dict>(optimizer_as_dict(optimizer, copy, buffers));
  return [dict] { return encode_torch_file(*dict); };
}

void load_optimizer_state(torch::optim::Optimizer& optimizer, std::vector<char> bytes,
                          const std::string& what) {
  try {
    const auto shared = std::make_shared<std::vector<char>>(std::move(bytes));
    c10::IValue value;
    try {
      value = decode_torch_file(shared, what);
    } catch (const std::exception&) {
      // not a pickled dict: an optimizer file of the first format
    }
    if (value.isGenericDict()) {
      const ReadDict d = value.toGenericDict();
      const c10::IValue format =
          d.contains(std::string("format")) ? d.at(std::string("format")) : c10::IValue();
      UT_CHECK_TRAIN(format.isInt() && (format.toInt() == kOptimizerFormat ||
                                        format.toInt() == kArchiveOptionsFormat),
                     what, " is not an optimizer state this version of unitrain reads");
      optimizer_dict::restore(optimizer, d, format.toInt(), what);
    } else {
      load_legacy_optimizer_state(optimizer, *shared, what);
    }
  } catch (const TrainError&) {
    throw;
  } catch (const std::exception& e) {
    throw TrainError(detail::concat(what,
                                    " does not fit this optimizer (was it saved by another "
                                    "optimizer type or model?): ",
                                    error_text(e)));
  }
}

}  // namespace unitrain
