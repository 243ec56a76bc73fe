#include "unitrain/checkpoint/state_io.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/torch.h>

#include <map>
#include <sstream>

#include "unitrain/core/error.h"

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

std::vector<char> archive_bytes(torch::serialize::OutputArchive& archive) {
  std::vector<char> bytes;
  archive.save_to([&bytes](const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    bytes.insert(bytes.end(), p, p + size);
    return size;
  });
  return bytes;
}

}  // namespace

std::vector<char> save_tensor_dict(const NamedTensors& tensors) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& [name, t] : tensors) dict.insert(name, t);
  return torch::pickle_save(dict);
}

NamedTensors load_tensor_dict(const std::vector<char>& bytes, const std::string& what) {
  torch::IValue value;
  try {
    value = torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    throw TrainError(detail::concat(what, " is not a tensor file PyTorch can read: ",
                                    std::string(e.what()).substr(0, 300)));
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

NamedTensors module_state(const torch::nn::Module& module, bool copy) {
  NamedTensors out;
  auto add = [&](const std::string& name, const torch::Tensor& t) {
    torch::Tensor d = t.detach();
    out.emplace_back(name, copy ? d.to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true) : d);
  };
  for (const auto& p : module.named_parameters(/*recurse=*/true)) add(p.key(), p.value());
  for (const auto& b : module.named_buffers(/*recurse=*/true)) add(b.key(), b.value());
  return out;
}

std::string load_module_state(torch::nn::Module& module, const NamedTensors& state, bool strict,
                              const std::string& what) {
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
      mismatched.push_back(name + " (file " + shape_of(it->second) + ", model " + shape_of(t) + ")");
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
                      (strict && mismatched.empty() ? " (set model.init_strict: false to load the "
                                                      "matching names only)"
                                                    : ""));
  }
  torch::NoGradGuard no_grad;
  size_t loaded = 0;
  for (auto& [name, t] : own) {
    auto it = given.find(name);
    if (it == given.end()) continue;
    t.copy_(it->second);
    ++loaded;
  }
  std::string summary = detail::concat("loaded ", loaded, " of ", own.size(), " tensors from ", what);
  if (!missing.empty()) summary += "; kept as initialised: " + list_names(missing);
  if (!unexpected.empty()) summary += "; ignored: " + list_names(unexpected);
  return summary;
}

namespace {

std::shared_ptr<torch::serialize::OutputArchive> optimizer_archive(
    const torch::optim::Optimizer& optimizer) {
  auto archive = std::make_shared<torch::serialize::OutputArchive>();
  torch::serialize::OutputArchive state(archive->compilation_unit());
  optimizer.save(state);
  archive->write("optimizer", state);
  const auto& groups = optimizer.param_groups();
  archive->write("groups/size", torch::tensor(static_cast<int64_t>(groups.size())));
  for (size_t i = 0; i < groups.size(); ++i) {
    torch::serialize::OutputArchive options(archive->compilation_unit());
    groups[i].options().serialize(options);
    archive->write("groups/" + std::to_string(i), options);
  }
  return archive;
}

torch::Tensor copy_of(const torch::Tensor& t) { return t.defined() ? t.clone() : t; }

/// Points one parameter's optimizer state at copies of its tensors; false for a state type
/// this does not know.
bool swap_for_copies(torch::optim::OptimizerParamState& st) {
  namespace o = torch::optim;
  if (auto* a = dynamic_cast<o::AdamParamState*>(&st)) {
    a->exp_avg(copy_of(a->exp_avg())).exp_avg_sq(copy_of(a->exp_avg_sq()));
    a->max_exp_avg_sq(copy_of(a->max_exp_avg_sq()));
  } else if (auto* w = dynamic_cast<o::AdamWParamState*>(&st)) {
    w->exp_avg(copy_of(w->exp_avg())).exp_avg_sq(copy_of(w->exp_avg_sq()));
    w->max_exp_avg_sq(copy_of(w->max_exp_avg_sq()));
  } else if (auto* sgd = dynamic_cast<o::SGDParamState*>(&st)) {
    sgd->momentum_buffer(copy_of(sgd->momentum_buffer()));
  } else if (auto* ada = dynamic_cast<o::AdagradParamState*>(&st)) {
    ada->sum(copy_of(ada->sum()));
  } else if (auto* rms = dynamic_cast<o::RMSpropParamState*>(&st)) {
    rms->square_avg(copy_of(rms->square_avg())).momentum_buffer(copy_of(rms->momentum_buffer()));
    rms->grad_avg(copy_of(rms->grad_avg()));
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::vector<char> save_optimizer_state(const torch::optim::Optimizer& optimizer) {
  return archive_bytes(*optimizer_archive(optimizer));
}

std::function<std::vector<char>()> optimizer_state_snapshot(torch::optim::Optimizer& optimizer,
                                                            bool detach) {
  auto archive = optimizer_archive(optimizer);  // holds the state tensors themselves
  if (detach) {
    bool known = true;
    for (auto& entry : optimizer.state()) known = known && swap_for_copies(*entry.second);
    if (!known) {
      auto bytes = std::make_shared<std::vector<char>>(archive_bytes(*archive));
      return [bytes] { return *bytes; };
    }
  }
  return [archive] { return archive_bytes(*archive); };
}

void load_optimizer_state(torch::optim::Optimizer& optimizer, const std::vector<char>& bytes,
                          const std::string& what) {
  try {
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
  } catch (const TrainError&) {
    throw;
  } catch (const std::exception& e) {
    throw TrainError(detail::concat(what, " does not fit this optimizer (was it saved by another "
                                          "optimizer type or model?): ",
                                    std::string(e.what()).substr(0, 300)));
  }
}

NamedTensors gradient_state(const torch::nn::Module& module) {
  NamedTensors out;
  for (const auto& p : module.named_parameters(true)) {
    if (p.value().grad().defined()) out.emplace_back(p.key(), p.value().grad().detach().clone());
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

NamedTensors rng_state() {
  NamedTensors out;
  out.emplace_back("cpu", at::detail::getDefaultCPUGenerator().get_state());
  if (at::detail::getCUDAHooks().hasCUDA()) {
    for (int64_t i = 0; i < at::detail::getCUDAHooks().getNumGPUs(); ++i) {
      out.emplace_back("cuda:" + std::to_string(i),
                       at::detail::getCUDAHooks().getDefaultCUDAGenerator(i).get_state());
    }
  }
  return out;
}

void load_rng_state(const NamedTensors& state, const std::string& what) {
  for (const auto& [name, t] : state) {
    if (name == "cpu") {
      at::Generator gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(t);
    } else if (name.rfind("cuda:", 0) == 0 && at::detail::getCUDAHooks().hasCUDA()) {
      const int64_t i = std::stoll(name.substr(5));
      if (i < at::detail::getCUDAHooks().getNumGPUs()) {
        at::Generator gen = at::detail::getCUDAHooks().getDefaultCUDAGenerator(i);
        std::lock_guard<std::mutex> lock(gen.mutex());
        gen.set_state(t);
      }
    } else if (name.rfind("cuda:", 0) != 0) {
      throw TrainError(what + " holds an unknown generator '" + name + "'");
    }
  }
}

}  // namespace unitrain
