#include "unitrain/checkpoint/frozen_weights.h"

#include <torch/torch.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "unitrain/checkpoint/file_image.h"
#include "unitrain/core/error.h"

namespace unitrain {

NamedTensors trainable_state(const torch::nn::Module& module, NamedTensors state) {
  std::set<std::string> trainable;
  for (const auto& p : module.named_parameters()) {
    if (p.value().requires_grad()) trainable.insert(p.key());
  }
  NamedTensors out;
  for (auto& [name, t] : state) {
    if (trainable.count(name) > 0) out.emplace_back(name, std::move(t));
  }
  return out;
}

NamedTensors with_frozen_parameters(const torch::nn::Module& module, NamedTensors state) {
  std::set<std::string> given;
  for (const auto& [name, t] : state) given.insert(name);
  for (const auto& p : module.named_parameters()) {
    if (!p.value().requires_grad() && given.count(p.key()) == 0) {
      state.emplace_back(p.key(), p.value().detach());
    }
  }
  return state;
}

void FrozenFingerprint::add(const std::string& name, c10::IntArrayRef shape, uint32_t values_crc,
                            uint64_t bytes) {
  const std::string head = name + ":" + c10::str(shape);
  crc_ = crc32_of(head.data(), head.size(), crc_);
  crc_ = crc32_combine_of(crc_, values_crc, bytes);
  ++tensors_;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  elements_ += n;
}

void FrozenFingerprint::add(const std::string& name, const torch::Tensor& t) {
  const torch::Tensor v = values_form(t);
  add(name, v.sizes(), crc32_of(static_cast<const char*>(v.data_ptr()), v.nbytes()), v.nbytes());
}

std::string FrozenFingerprint::json() const {
  return nlohmann::json{{"tensors", tensors_}, {"elements", elements_}, {"crc32", crc_}}.dump();
}

torch::Tensor FrozenFingerprint::values_form(const torch::Tensor& t) {
  torch::Tensor v = t.detach().to(torch::kCPU);
  if (v.is_floating_point()) v = v.to(torch::kFloat);
  return v.contiguous();
}

std::string frozen_fingerprint(const torch::nn::Module& module, const NamedTensors* values) {
  std::map<std::string, torch::Tensor> given;
  if (values != nullptr) given.insert(values->begin(), values->end());
  FrozenFingerprint out;
  for (const auto& p : module.named_parameters()) {
    if (p.value().requires_grad()) continue;
    const auto it = given.find(p.key());
    out.add(p.key(), it != given.end() ? it->second : p.value());
  }
  return out.json();
}

void check_frozen_fingerprint(const std::string& saved, const std::string& now,
                              const std::string& path) {
  const auto was = nlohmann::json::parse(saved, nullptr, false);
  const auto is = nlohmann::json::parse(now);
  UT_CHECK(was == is, path, ": the checkpoint trained adapters on frozen weights ", was.dump(),
           ", but the model's frozen weights now are ", is.dump(),
           ": the base model "
           "(model.args.pretrained or model.init_from) changed since; give the base it was "
           "trained on");
}

}  // namespace unitrain
