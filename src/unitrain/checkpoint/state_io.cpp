#include "unitrain/checkpoint/state_io.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#include <map>
#include <sstream>
#include <string_view>

#include "unitrain/checkpoint/torch_file.h"
#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/unit_parts.h"

namespace unitrain {
namespace {

std::string list_names(const std::vector<std::string>& names, size_t max = 8) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < max; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > max) out += detail::concat(", ... (", names.size(), " in all)");
  return out;
}

std::string shape_of(const torch::Tensor& t) {
  std::ostringstream s;
  s << t.sizes() << " " << t.dtype();
  return s.str();
}

// torch.jit.save writes a zip holding constants.pkl and code/; a state_dict file has neither.
bool is_torchscript_archive(const char* bytes, size_t size) {
  const std::string_view text(bytes, size);
  return text.rfind("PK", 0) == 0 && text.find("/constants.pkl") != std::string_view::npos;
}

}  // namespace

FileImage tensor_dict_image(const NamedTensors& tensors) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& [name, t] : tensors) dict.insert(name, t);
  return encode_torch_file(dict);
}

std::vector<char> save_tensor_dict(const NamedTensors& tensors) {
  return tensor_dict_image(tensors).bytes();
}

namespace {

/// The dict of tensors in a PyTorch file of `size` bytes at `bytes`, kept alive by `keep`.
NamedTensors decode_tensor_dict(const char* bytes, size_t size,
                                const std::shared_ptr<const void>& keep, const std::string& what) {
  torch::IValue value;
  try {
    value = decode_torch_file(bytes, size, keep, what);
  } catch (const std::exception& e) {
    UT_CHECK_TRAIN(!is_torchscript_archive(bytes, size), what,
                   " is a TorchScript module (torch.jit.save), not a state_dict; save the "
                   "weights with torch.save(model.state_dict(), \"weights.pt\") in Python, or "
                   "from a unitrain run with `unitrain export run.yaml --format state_dict "
                   "--out weights.pt`");
    throw TrainError(
        detail::concat(what, " is not a tensor file PyTorch can read: ", error_text(e)));
  }
  UT_CHECK_TRAIN(value.isGenericDict(), what, " holds a ", value.tagKind(),
                 ", expected a dict of name -> tensor (a state_dict)");
  NamedTensors out;
  for (const auto& entry : value.toGenericDict()) {
    UT_CHECK_TRAIN(entry.key().isString() && entry.value().isTensor(), what,
                   " must map names to tensors; found a ", entry.key().tagKind(), " -> ",
                   entry.value().tagKind(), " entry");
    out.emplace_back(entry.key().toStringRef(), entry.value().toTensor());
  }
  return out;
}

}  // namespace

NamedTensors load_tensor_dict(std::vector<char> bytes, const std::string& what) {
  const auto shared = std::make_shared<std::vector<char>>(std::move(bytes));
  return decode_tensor_dict(shared->data(), shared->size(), shared, what);
}

NamedTensors map_tensor_dict(const MappedFile& file, const std::string& what) {
  return decode_tensor_dict(reinterpret_cast<const char*>(file.data()), file.size(),
                            file.keepalive(), what);
}

torch::Tensor& SnapshotBuffers::buffer_for(const std::string& name, const torch::Tensor& t) {
  torch::Tensor& buffer = buffers_[name];
  if (!buffer.defined() || !buffer.sizes().equals(t.sizes()) || buffer.dtype() != t.dtype()) {
    buffer = torch::empty(t.sizes(), t.options().device(torch::kCPU).requires_grad(false));
  }
  return buffer;
}

torch::Tensor SnapshotBuffers::copy_now(const std::string& name, const torch::Tensor& t) {
  torch::NoGradGuard no_grad;
  torch::Tensor& buffer = buffer_for(name, t);
  buffer.copy_(t.detach());
  return buffer;
}

torch::Tensor SnapshotBuffers::copy(const std::string& name, const torch::Tensor& t) {
  if (!defer_) return copy_now(name, t);
  torch::Tensor& buffer = buffer_for(name, t);
  queued_.emplace_back(buffer, t.detach());
  return buffer;
}

std::function<void()> SnapshotBuffers::take_copies() {
  if (queued_.empty()) return nullptr;
  auto queued =
      std::make_shared<std::vector<std::pair<torch::Tensor, torch::Tensor>>>(std::move(queued_));
  queued_.clear();
  return [queued] {
    torch::NoGradGuard no_grad;
    for (auto& [buffer, source] : *queued) buffer.copy_(source);
    queued->clear();  // drops the references to training's tensors
  };
}

NamedTensors named_state(const NamedTensors& params, const NamedTensors& buffers_of_module,
                         bool copy, SnapshotBuffers* buffers) {
  NamedTensors out;
  auto add = [&](const std::string& name, const torch::Tensor& t, bool parameter) {
    torch::Tensor d = t.detach();
    if (copy && buffers) {
      d = parameter ? buffers->copy("model/" + name, d) : buffers->copy_now("model/" + name, d);
    } else if (copy) {
      d = d.to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true);
    } else {
      d = d.to(torch::kCPU);  // a CPU tensor as it is; a device's copied to the CPU
    }
    out.emplace_back(name, d);
  };
  for (const auto& [name, t] : params) add(name, t, true);
  for (const auto& [name, t] : buffers_of_module) add(name, t, false);
  return out;
}

NamedTensors module_state(const torch::nn::Module& module, bool copy, SnapshotBuffers* buffers) {
  NamedTensors params, module_buffers;
  for (const auto& p : module.named_parameters(/*recurse=*/true))
    params.emplace_back(p.key(), p.value());
  for (const auto& b : module.named_buffers(/*recurse=*/true))
    module_buffers.emplace_back(b.key(), b.value());
  return named_state(params, module_buffers, copy, buffers);
}

std::string load_module_state(torch::nn::Module& module, const NamedTensors& state, bool strict,
                              const std::string& what, const std::string& strict_key) {
  std::map<std::string, torch::Tensor> given(state.begin(), state.end());
  std::map<std::string, torch::Tensor> own;
  for (const auto& p : module.named_parameters(true)) own[p.key()] = p.value();
  for (const auto& b : module.named_buffers(true)) own[b.key()] = b.value();

  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [name, t] : own) {
    auto it = given.find(name);
    if (it == given.end()) {
      missing.push_back(name);
    } else if (!it->second.sizes().equals(t.sizes()) || it->second.dtype() != t.dtype()) {
      mismatched.push_back(name + " (file " + shape_of(it->second) + ", model " + shape_of(t) +
                           ")");
    }
  }
  for (const auto& [name, t] : given) {
    if (!own.count(name)) unexpected.push_back(name);
  }
  std::string problems;
  if (!mismatched.empty()) problems += "; mismatched: " + list_names(mismatched);
  if (strict && !missing.empty()) problems += "; missing: " + list_names(missing);
  if (strict && !unexpected.empty()) problems += "; unexpected: " + list_names(unexpected);
  if (!problems.empty()) {
    throw ConfigError(what + " does not fit the model" + problems +
                      (strict && mismatched.empty() && !strict_key.empty()
                           ? " (set " + strict_key + ": false to load the matching names only)"
                           : ""));
  }
  if (!own.empty() && missing.size() == own.size()) {  // not strict, and nothing fits
    std::vector<std::string> own_names;
    for (const auto& [name, t] : own) own_names.push_back(name);
    throw ConfigError(detail::concat(
        what, " does not fit the model: none of its ", given.size(),
        " names is one of the model's ", own.size(), " (file: ", list_names(unexpected, 4),
        "; model: ", list_names(own_names, 4), "), so nothing would be loaded"));
  }
  torch::NoGradGuard no_grad;
  std::vector<std::string> loaded;
  for (auto& [name, t] : own) {
    auto it = given.find(name);
    if (it == given.end()) continue;
    loaded.push_back(name);
    // A tensor given as itself (with_frozen_parameters: a frozen base kept as it is, maybe in
    // parts, whose memory reads as empty) needs no copy.
    const torch::Tensor& v = it->second;
    if (v.is_alias_of(t) && v.storage_offset() == t.storage_offset() && v.sizes() == t.sizes() &&
        v.strides() == t.strides() && v.dtype() == t.dtype()) {
      continue;
    }
    if (!load_into_parts(t, v)) t.copy_(v);  // a model built in parts: its part
  }
  std::string summary =
      detail::concat("loaded ", loaded.size(), " of ", own.size(), " tensors from ", what);
  if (!missing.empty() || !unexpected.empty()) summary += ": " + list_names(loaded);
  if (!missing.empty()) summary += "; kept as initialised: " + list_names(missing);
  if (!unexpected.empty()) summary += "; ignored: " + list_names(unexpected);
  return summary;
}

NamedTensors gradient_state(const torch::nn::Module& module) {
  NamedTensors out;
  for (const auto& p : module.named_parameters(true)) {
    if (p.value().grad().defined()) {  // a copy on the CPU, whatever the device
      out.emplace_back(p.key(), p.value().grad().detach().to(torch::kCPU, false, /*copy=*/true));
    }
  }
  return out;
}

void load_gradient_state(torch::nn::Module& module, const NamedTensors& grads,
                         const std::string& what) {
  std::map<std::string, torch::Tensor> given(grads.begin(), grads.end());
  for (auto& p : module.named_parameters(true)) {
    auto it = given.find(p.key());
    if (it == given.end()) {
      p.value().mutable_grad() = torch::Tensor();
      continue;
    }
    UT_CHECK_TRAIN(it->second.sizes().equals(p.value().sizes()), what, ": gradient of ", p.key(),
                   " has shape ", it->second.sizes(), ", the parameter ", p.value().sizes());
    p.value().mutable_grad() = it->second.to(p.value().device()).clone();
  }
}

namespace {

/// The GPUs whose generators a checkpoint holds: none where LibTorch has no CUDA.
int64_t cuda_devices() {
  return at::hasCUDA() ? static_cast<int64_t>(torch::cuda::device_count()) : 0;
}

/// GPU `index`'s default generator (through the Context, which LibTorch 1.x and 2.x both have).
at::Generator cuda_generator(int64_t index) {
  return at::globalContext().defaultGenerator(
      c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index)));
}

}  // namespace

NamedTensors rng_state() {
  NamedTensors out;
  out.emplace_back("cpu", at::detail::getDefaultCPUGenerator().get_state());
  for (int64_t i = 0; i < cuda_devices(); ++i) {
    out.emplace_back("cuda:" + std::to_string(i), cuda_generator(i).get_state());
  }
  return out;
}

void load_rng_state(const NamedTensors& state, const std::string& what) {
  for (const auto& [name, t] : state) {
    if (name == "cpu") {
      at::Generator gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(t);
    } else if (name.rfind("cuda:", 0) == 0) {
      const int64_t i = std::stoll(name.substr(5));
      if (i < cuda_devices()) {
        at::Generator gen = cuda_generator(i);
        std::lock_guard<std::mutex> lock(gen.mutex());
        gen.set_state(t);
      }
    } else if (name.rfind("cuda:", 0) != 0) {
      throw TrainError(what + " holds an unknown generator '" + name + "'");
    }
  }
}

}  // namespace unitrain
