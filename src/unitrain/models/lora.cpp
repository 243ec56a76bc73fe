#include "unitrain/models/lora.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include <cmath>
#include <set>

#include "unitrain/core/error.h"
#include "unitrain/models/hf_lm_parts.h"

namespace unitrain {

double LoraOptions::scaling() const {
  return rslora ? alpha / std::sqrt(static_cast<double>(r)) : alpha / static_cast<double>(r);
}

void LoraOptions::declare(Options<LoraOptions>& o) {
  using T = LoraOptions;
  o.field("r", &T::r).min(1).help("the adapters' rank (PEFT's r)");
  o.field("alpha", &T::alpha)
      .gt(0)
      .help(
          "lora_alpha: the adapter's output is scaled by alpha / r (alpha / sqrt(r) with rslora)");
  o.field("dropout", &T::dropout)
      .min(0)
      .lt(1)
      .help(
          "dropout on the adapters' input while training (lora_dropout); the base layer sees x "
          "unchanged");
  o.field("target_modules", &T::target_modules)
      .required()
      .help(
          "the layers that get an adapter, by name or last part of it (PEFT's rule: a layer "
          "`model.layers.0.self_attn.q_proj` is named by q_proj, self_attn.q_proj or the whole "
          "name); each must name at least one Linear (or GPT-2 Conv1D) layer, e.g. [q_proj, "
          "v_proj] "
          "for llama, [c_attn] for gpt2, [qkv] for transformer_lm");
  o.field("rslora", &T::rslora).help("rank-stabilised scaling alpha / sqrt(r) (use_rslora)");
  o.check([](T& l, const Config& c) {
    UT_CHECK(!l.target_modules.empty(), c.path(), ".target_modules: name at least one layer");
  });
}

namespace models {

LoraDownImpl::LoraDownImpl(int64_t in, int64_t r, double dropout,
                           c10::optional<at::Generator> generator)
    : dropout(dropout) {
  // kaiming_uniform_(a = sqrt(5)): gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / fan_in).
  const double bound = std::sqrt(2.0 / 6.0) * std::sqrt(3.0 / static_cast<double>(in));
  torch::NoGradGuard no_grad;
  weight = register_parameter("weight", torch::empty({r, in}).uniform_(-bound, bound, generator));
}

torch::Tensor LoraDownImpl::forward(const torch::Tensor& x) {
  return torch::linear(dropout > 0 ? torch::dropout(x, dropout, is_training()) : x, weight);
}

LoraUpImpl::LoraUpImpl(int64_t r, int64_t out, double scaling) : scaling(scaling) {
  weight = register_parameter("weight", torch::zeros({out, r}));
}

torch::Tensor LoraUpImpl::forward(const torch::Tensor& h) {
  return torch::linear(h, weight) * scaling;
}

namespace {

/// (in, out, fan_in_fan_out) of a layer that can take an adapter; in = 0 for any other.
struct LayerShape {
  int64_t in = 0, out = 0;
  bool fan_in_fan_out = false;
};

LayerShape shape_of(torch::nn::Module& m) {
  if (auto* l = m.as<torch::nn::LinearImpl>()) return {l->weight.size(1), l->weight.size(0), false};
  if (auto* c = m.as<Conv1DImpl>()) return {c->weight.size(0), c->weight.size(1), true};
  return {};
}

bool names(const std::string& layer, const std::string& target) {
  return layer == target || ends_with(layer, "." + target);
}

}  // namespace

std::vector<LoraLayer> add_lora_adapters(torch::nn::Module& model, const LoraOptions& o,
                                         const std::string& key,
                                         c10::optional<at::Generator> generator) {
  UT_CHECK(lora_layers(model).empty(), key, ": the model already has LoRA adapters");
  std::vector<LoraLayer> adapted;
  std::set<std::string> used, candidates;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    const std::string& name = item.key();
    const LayerShape s = shape_of(*item.value());
    if (s.in > 0) candidates.insert(name.substr(name.rfind('.') + 1));
    for (const std::string& target : o.target_modules) {
      if (!names(name, target)) continue;
      UT_CHECK(s.in > 0, key, ".target_modules: '", target, "' names ", name, ", a ",
               item.value()->name(), ": LoRA adapts Linear layers (and GPT-2's Conv1D)");
      used.insert(target);
      adapted.push_back({name, item.value().get(), s.fan_in_fan_out});
      break;
    }
  }
  for (const std::string& target : o.target_modules) {
    UT_CHECK(used.count(target) > 0, key, ".target_modules: '", target,
             "' names no layer of the model; its Linear layers are named ",
             fmt::format("{}", fmt::join(candidates, ", ")));
  }
  for (auto& p : model.parameters()) p.requires_grad_(false);
  for (LoraLayer& a : adapted) {
    const LayerShape s = shape_of(*a.layer);
    auto down = std::make_shared<LoraDownImpl>(s.in, o.r, o.dropout, generator);
    auto up = std::make_shared<LoraUpImpl>(o.r, s.out, o.scaling());
    const torch::Device device = a.layer->named_parameters(false)["weight"].device();
    down->to(device);  // drawn on the CPU (the generator's), kept where the layer is
    up->to(device);
    a.layer->register_module("lora_A", down);
    a.layer->register_module("lora_B", up);
  }
  return adapted;
}

std::vector<LoraLayer> lora_layers(torch::nn::Module& model) {
  std::vector<LoraLayer> out;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    if (item.value()->named_children().find("lora_A") == nullptr) continue;
    out.push_back({item.key(), item.value().get(), shape_of(*item.value()).fan_in_fan_out});
  }
  return out;
}

torch::Tensor with_lora(torch::nn::Module& layer, const torch::Tensor& x, torch::Tensor y) {
  const auto children = layer.named_children();
  if (children.is_empty()) return y;
  const auto* down = children.find("lora_A");
  const auto* up = children.find("lora_B");
  if (down == nullptr || up == nullptr) return y;
  auto h = (*down)->as<LoraDownImpl>()->forward(x);
  return y + (*up)->as<LoraUpImpl>()->forward(h);
}

torch::Tensor lora_delta(const LoraLayer& adapted) {
  const auto children = adapted.layer->named_children();
  const auto* down = children["lora_A"]->as<LoraDownImpl>();
  const auto* up = children["lora_B"]->as<LoraUpImpl>();
  torch::NoGradGuard no_grad;
  auto delta = torch::matmul(up->weight, down->weight) * up->scaling;
  return adapted.fan_in_fan_out ? delta.t().contiguous() : delta;
}

size_t merge_lora_adapters(torch::nn::Module& model) {
  const std::vector<LoraLayer> adapted = lora_layers(model);
  for (const LoraLayer& a : adapted) {
    torch::Tensor delta = lora_delta(a);
    torch::Tensor weight = a.layer->named_parameters(/*recurse=*/false)["weight"];
    torch::NoGradGuard no_grad;
    weight.add_(delta.to(weight.scalar_type()));
    a.layer->unregister_module("lora_A");
    a.layer->unregister_module("lora_B");
  }
  return adapted.size();
}

}  // namespace models
}  // namespace unitrain
