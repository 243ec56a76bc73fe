#include "unitrain/models/lora.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cmath>
#include <optional>
#include <regex>
#include <set>

#include "unitrain/core/error.h"
#include "unitrain/models/hf_lm_parts.h"
#include "unitrain/parallel/tensor_parallel.h"

namespace unitrain {

double LoraOptions::scaling() const {
  return rslora ? alpha / std::sqrt(static_cast<double>(r)) : alpha / static_cast<double>(r);
}

bool LoraOptions::all_linear() const {
  std::string lower = target_pattern;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return lower == "all-linear";
}

namespace {

/// `pattern` compiled; ConfigError naming `key` when it is not a regular expression.
std::regex target_regex(const std::string& pattern, const std::string& key) {
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw ConfigError(
        detail::concat(key, ": '", pattern, "' is not a regular expression (", e.what(), ")"));
  }
}

std::string flow_text(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

/// target_modules: a list of names, or one string (all-linear or a regular expression).
void read_target_modules(LoraOptions& l, const Config& c) {
  const std::string key = c.key_path("target_modules");
  const YAML::Node node = c.node()["target_modules"];
  if (node.IsScalar()) {
    l.target_pattern = c.get_string("target_modules");
    l.target_modules.clear();
    UT_CHECK(!l.target_pattern.empty(), key,
             ": give layer names such as [q_proj, v_proj], all-linear or a regular expression");
    if (!l.all_linear()) target_regex(l.target_pattern, key);
    return;
  }
  UT_CHECK(node.IsSequence(), key,
           ": expected a list of layer names such as [q_proj, v_proj], all-linear or a regular "
           "expression such as '.*\\.(q_proj|v_proj)', got ",
           flow_text(node));
  l.target_modules = c.get_string_list("target_modules");
  l.target_pattern.clear();
  UT_CHECK(!l.target_modules.empty(), key, ": name at least one layer, e.g. [q_proj, v_proj]");
}

}  // namespace

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
  o.key("target_modules", Type::Any)
      .required()
      .help(
          "the layers that get an adapter, in PEFT's two forms. A list of names, each a layer's "
          "whole name or its last parts (`model.layers.0.self_attn.q_proj` is named by q_proj, "
          "self_attn.q_proj or the whole name), each naming at least one Linear (or GPT-2 "
          "Conv1D) layer: e.g. [q_proj, v_proj] for llama, [c_attn] for gpt2, [qkv] for "
          "transformer_lm. Or one string: all-linear (every Linear/Conv1D layer but the output "
          "layer, lm_head), or a regular expression a layer's whole name must match (PEFT's "
          "re.fullmatch), e.g. '.*\\.(q_proj|v_proj)'");
  o.field("modules_to_save", &T::modules_to_save)
      .help(
          "modules trained in full beside the adapters (PEFT's modules_to_save), named as list "
          "targets are, e.g. [lm_head] or [embed_tokens]: their parameters train, no adapter goes "
          "on or in them; the adapter folder holds their values and a merged export has them");
  o.field("rslora", &T::rslora).help("rank-stabilised scaling alpha / sqrt(r) (use_rslora)");
  o.check([](T& l, const Config& c) { read_target_modules(l, c); });
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

/// (in, out, fan_in_fan_out) of a layer that can take an adapter, the whole layer's (a layer
/// cut over a tensor group too); in = 0 for any other.
struct LayerShape {
  int64_t in = 0, out = 0;
  bool fan_in_fan_out = false;
};

LayerShape shape_of(torch::nn::Module& m) {
  if (auto* l = m.as<torch::nn::LinearImpl>()) return {l->weight.size(1), l->weight.size(0), false};
  if (auto* c = m.as<Conv1DImpl>()) return {c->weight.size(0), c->weight.size(1), true};
  if (auto* c = m.as<ColumnParallelLinearImpl>()) {
    const bool in_out = c->split().dim == 1;
    return {c->weight.size(in_out ? 0 : 1), c->split().whole, in_out};
  }
  if (auto* r = m.as<RowParallelLinearImpl>()) {
    const bool in_out = r->split().dim == 0;
    return {r->split().whole, r->weight.size(in_out ? 1 : 0), in_out};
  }
  return {};
}

/// A parallel layer's adapter drawn whole (the same adapter whatever T) and cut with it: a
/// column-parallel layer's B by its output's rows, a row-parallel layer's A by its input.
void cut_with_layer(torch::nn::Module& layer, LoraDownImpl& down, LoraUpImpl& up) {
  const auto* c = layer.as<ColumnParallelLinearImpl>();
  const auto* r = layer.as<RowParallelLinearImpl>();
  UT_CHECK((c == nullptr || c->chunks() == 0) && (r == nullptr || r->chunks() == 0),
           "model.lora with distributed.reproducible_chunks is not built yet (the adapters' "
           "products are not chunked); leave one of them out");
  torch::NoGradGuard no_grad;
  if (auto* c = layer.as<ColumnParallelLinearImpl>()) {
    up.weight.set_data(tp::part_of(up.weight, 0, c->part(), c->parts(), c->split().blocks));
  } else if (auto* r = layer.as<RowParallelLinearImpl>()) {
    down.weight.set_data(tp::part_of(down.weight, 1, r->part(), r->parts()));
  }
}

bool is_adapter(torch::nn::Module& m) {
  return m.as<LoraDownImpl>() != nullptr || m.as<LoraUpImpl>() != nullptr;
}

std::string last_name(const std::string& name) { return name.substr(name.rfind('.') + 1); }

bool starts_inside(const std::string& name, const std::string& outer) {
  return name.size() > outer.size() && name.compare(0, outer.size(), outer) == 0 &&
         name[outer.size()] == '.';
}

/// all-linear leaves out the output layer: the last Linear/Conv1D child of the model itself.
std::string output_layer(torch::nn::Module& model) {
  std::string out;
  for (const auto& child : model.named_children()) {
    if (shape_of(*child.value()).in > 0) out = child.key();
  }
  return out;
}

}  // namespace

bool names_module(const std::string& name, const std::string& target) {
  return name == target || ends_with(name, "." + target);
}

std::vector<std::string> lora_modules_to_save(torch::nn::Module& model, const LoraOptions& o,
                                              const std::string& key) {
  std::vector<std::string> out;
  std::set<std::string> used, candidates;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    const std::string& name = item.key();
    if (is_adapter(*item.value())) continue;
    if (!item.value()->named_parameters(/*recurse=*/false).is_empty()) {
      candidates.insert(last_name(name));
    }
    bool named = false;
    for (const std::string& target : o.modules_to_save) {
      if (!names_module(name, target)) continue;
      used.insert(target);
      named = true;
    }
    if (named && (out.empty() || !starts_inside(name, out.back()))) out.push_back(name);
  }
  for (const std::string& target : o.modules_to_save) {
    UT_CHECK(used.count(target) > 0, key, ".modules_to_save: '", target,
             "' names no module of the model; its modules with parameters are named ",
             fmt::format("{}", fmt::join(candidates, ", ")));
  }
  return out;
}

std::vector<std::string> lora_target_layers(torch::nn::Module& model, const LoraOptions& o,
                                            const std::string& key) {
  const std::string where = key + ".target_modules";
  const std::vector<std::string> saved = lora_modules_to_save(model, o, key);
  const auto in_saved = [&saved](const std::string& name) {
    for (const std::string& s : saved) {
      if (name == s || starts_inside(name, s)) return true;
    }
    return false;
  };
  const bool all_linear = o.all_linear();
  const bool list = o.target_pattern.empty();
  std::optional<std::regex> pattern;
  if (!list && !all_linear) pattern = target_regex(o.target_pattern, where);
  const std::string output = all_linear ? output_layer(model) : "";
  std::vector<std::string> out;
  std::set<std::string> used, only_saved, candidates;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    const std::string& name = item.key();
    if (is_adapter(*item.value())) continue;
    const LayerShape s = shape_of(*item.value());
    if (s.in > 0) candidates.insert(last_name(name));
    std::vector<std::string> by;  // the list entries that name it
    if (list) {
      for (const std::string& target : o.target_modules) {
        if (names_module(name, target)) by.push_back(target);
      }
    }
    const bool named = list         ? !by.empty()
                       : all_linear ? s.in > 0 && name != output
                                    : std::regex_match(name, *pattern);
    if (!named) continue;
    if (in_saved(name)) {  // PEFT's rule: modules to save take no adapter
      only_saved.insert(by.begin(), by.end());
      continue;
    }
    UT_CHECK(s.in > 0, where, ": ", list ? "'" + by.front() + "'" : "the pattern", " names ", name,
             ", a ", item.value()->name(), ": LoRA adapts Linear layers (and GPT-2's Conv1D)");
    used.insert(by.begin(), by.end());
    out.push_back(name);
  }
  const std::string layers = fmt::format("{}", fmt::join(candidates, ", "));
  for (const std::string& target : o.target_modules) {
    UT_CHECK(used.count(target) > 0, where, ": '", target,
             only_saved.count(target) > 0
                 ? "' names only modules that " + key +
                       ".modules_to_save trains in full: keep each layer in one of the two"
                 : "' names no layer of the model; its Linear layers are named " + layers);
  }
  UT_CHECK(!out.empty() || list, where, ": ",
           all_linear ? std::string("all-linear finds no Linear layer but the output layer")
                      : "'" + o.target_pattern +
                            "' matches no layer's whole name (a string is a regular "
                            "expression the whole name must match, as PEFT's re.fullmatch: "
                            "write [q_proj] for the layers named q_proj); its Linear layers "
                            "are named " +
                            layers);
  return out;
}

std::vector<std::string> target_modules_naming(torch::nn::Module& model,
                                               const std::vector<std::string>& adapted) {
  const std::set<std::string> whole(adapted.begin(), adapted.end());
  std::set<std::string> lasts;
  for (const std::string& name : adapted) lasts.insert(last_name(name));
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    if (is_adapter(*item.value())) continue;
    if (lasts.count(last_name(item.key())) != whole.count(item.key())) {
      return {whole.begin(), whole.end()};
    }
  }
  return {lasts.begin(), lasts.end()};
}

std::vector<LoraLayer> add_lora_adapters(torch::nn::Module& model, const LoraOptions& o,
                                         const std::string& key,
                                         c10::optional<at::Generator> generator) {
  UT_CHECK(lora_layers(model).empty(), key, ": the model already has LoRA adapters");
  const std::vector<std::string> names = lora_target_layers(model, o, key);
  const std::vector<std::string> saved = lora_modules_to_save(model, o, key);
  const auto modules = model.named_modules("", /*include_self=*/false);
  for (auto& p : model.parameters()) p.requires_grad_(false);
  for (const std::string& name : saved) {
    for (auto& p : modules[name]->parameters()) p.requires_grad_(true);
  }
  std::vector<LoraLayer> adapted;
  for (const std::string& name : names) {
    torch::nn::Module* layer = modules[name].get();
    const LayerShape s = shape_of(*layer);
    auto down = std::make_shared<LoraDownImpl>(s.in, o.r, o.dropout, generator);
    auto up = std::make_shared<LoraUpImpl>(o.r, s.out, o.scaling());
    cut_with_layer(*layer, *down, *up);
    const torch::Device device = layer->named_parameters(false)["weight"].device();
    down->to(device);  // drawn on the CPU (the generator's), kept where the layer is
    up->to(device);
    layer->register_module("lora_A", down);
    layer->register_module("lora_B", up);
    adapted.push_back({name, layer, s.fan_in_fan_out});
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
  // A layer cut over a tensor group: the adapter's rank-r activation is whole on every process
  // of it. Column-parallel: A takes the whole input, each process's B its rows; h's gradient is
  // summed over the group (copy_to_group), so A's is whole. Row-parallel: each process's
  // columns of A its part of the input, the parts' products summed (one all-reduce of
  // [..., r]) before the whole B.
  if (auto* c = layer.as<ColumnParallelLinearImpl>()) {
    const auto h = tp::copy_to_group((*down)->as<LoraDownImpl>()->forward(x), c->group());
    return y + (*up)->as<LoraUpImpl>()->forward(h);
  }
  if (auto* r = layer.as<RowParallelLinearImpl>()) {
    const torch::Tensor in = r->input_is_parallel() ? x : tp::split_last_dim(x, r->group());
    const auto h = tp::reduce_from_group((*down)->as<LoraDownImpl>()->forward(in), r->group());
    return y + (*up)->as<LoraUpImpl>()->forward(h);
  }
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
