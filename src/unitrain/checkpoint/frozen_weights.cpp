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

std::string frozen_fingerprint(const torch::nn::Module& module, const NamedTensors* values) {
  std::map<std::string, torch::Tensor> given;
  if (values != nullptr) given.insert(values->begin(), values->end());
  uint32_t crc = 0;
  int64_t tensors = 0, elements = 0;
  for (const auto& p : module.named_parameters()) {
    if (p.value().requires_grad()) continue;
    const auto it = given.find(p.key());
    torch::Tensor t = it != given.end() ? it->second : p.value();
    t = t.detach().to(torch::kCPU);
    if (t.is_floating_point()) t = t.to(torch::kFloat);
    t = t.contiguous();
    const std::string head = p.key() + ":" + c10::str(t.sizes());
    crc = crc32_of(head.data(), head.size(), crc);
    crc = crc32_of(static_cast<const char*>(t.data_ptr()), t.nbytes(), crc);
    ++tensors;
    elements += t.numel();
  }
  return nlohmann::json{{"tensors", tensors}, {"elements", elements}, {"crc32", crc}}.dump();
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
