#include "unitrain/models/torchscript_export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>

#include "unitrain/compat/variant.h"
#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/registered_list.h"
#include "unitrain/models/model.h"

namespace unitrain {
namespace {

using JitModule = torch::jit::Module;

std::string int_list(c10::ArrayRef<int64_t> values) {
  return fmt::format("[{}]", fmt::join(values, ", "));
}

/// The forward of a LibTorch layer, or "" for a container without one.
std::string layer_forward(const torch::nn::Module& m, const std::string& where) {
  const std::string head = "def forward(self, x):\n    return ";
  if (const auto* linear = m.as<torch::nn::Linear>()) {
    return head + fmt::format("torch.linear(x, self.weight, {})\n",
                              linear->options.bias() ? "self.bias" : "None");
  }
  if (const auto* conv = m.as<torch::nn::Conv2d>()) {
    const auto& o = conv->options;
    const auto* padding = torch_variant::get_if<torch::ExpandingArray<2>>(&o.padding());
    UT_CHECK(padding != nullptr &&
                 torch_variant::holds_alternative<torch::enumtype::kZeros>(o.padding_mode()),
             "torchscript export: ", where, ": only explicit zero padding is supported");
    return head + fmt::format("torch.conv2d(x, self.weight, {}, {}, {}, {}, {})\n",
                              o.bias() ? "self.bias" : "None", int_list(*o.stride()),
                              int_list(**padding), int_list(*o.dilation()), o.groups());
  }
  if (const auto* bn = m.as<torch::nn::BatchNorm2d>()) {
    const auto& o = bn->options;
    UT_CHECK(o.track_running_stats(), "torchscript export: ", where,
             ": batch norm without running statistics cannot run in eval mode");
    return head + fmt::format(
                      "torch.batch_norm(x, {}, {}, self.running_mean, self.running_var, False, "
                      "0.0, {}, False)\n",
                      o.affine() ? "self.weight" : "None", o.affine() ? "self.bias" : "None",
                      torchscript::literal(o.eps()));
  }
  if (const auto* ln = m.as<torch::nn::LayerNorm>()) {
    const auto& o = ln->options;
    return head + fmt::format("torch.layer_norm(x, {}, {}, {}, {}, False)\n",
                              int_list(o.normalized_shape()),
                              o.elementwise_affine() ? "self.weight" : "None",
                              o.elementwise_affine() ? "self.bias" : "None",
                              torchscript::literal(o.eps()));
  }
  if (const auto* emb = m.as<torch::nn::Embedding>()) {
    const auto& o = emb->options;
    UT_CHECK(!o.max_norm().has_value(), "torchscript export: ", where,
             ": embeddings with max_norm are not supported");
    return head + fmt::format("torch.embedding(self.weight, x, {}, False, False)\n",
                              o.padding_idx().value_or(-1));
  }
  return "";
}

/// Builds the TorchScript twin of a LibTorch module tree: the same children, parameters and
/// buffers (copied) under the same names, and forward defined for the standard layers.
class Mirror {
 public:
  JitModule build(const torch::nn::Module& m, const std::string& where) {
    JitModule j(c10::QualifiedName("__torch__.unitrain." + class_name(m)), cu_,
                /*shouldMangle=*/true);
    j.register_attribute("training", c10::BoolType::get(), false);  // as a scripted nn.Module
    for (const auto& p : m.named_parameters(/*recurse=*/false)) {
      j.register_parameter(p.key(),
                           p.value().detach().clone().requires_grad_(p.value().requires_grad()),
                           /*is_buffer=*/false);
    }
    for (const auto& b : m.named_buffers(/*recurse=*/false)) {
      j.register_buffer(b.key(), b.value().detach().clone());
    }
    for (const auto& c : m.named_children()) {
      j.register_module(c.key(), build(*c.value(), where + "." + c.key()));
    }
    if (std::string source = layer_forward(m, where); !source.empty()) j.define(source);
    return j;
  }

 private:
  static std::string class_name(const torch::nn::Module& m) {
    std::string name;
    for (char ch : m.name()) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    return name;
  }
  std::shared_ptr<torch::jit::CompilationUnit> cu_ =
      std::make_shared<torch::jit::CompilationUnit>();
};

/// `inner` behind the input normalisation of `norm` (the arithmetic of NormalizeDataset, in
/// float32, so that the exported module sees what the model saw in training).
JitModule with_input_normalization(const JitModule& inner, const InputNormalization& norm) {
  UT_CHECK(!norm.mean.empty() && norm.mean.size() == norm.std.size(),
           "torchscript export: the input normalisation needs one mean and one std per channel, "
           "got ",
           norm.mean.size(), " and ", norm.std.size());
  JitModule j(c10::QualifiedName("__torch__.unitrain.NormalizedInput"),
              std::make_shared<torch::jit::CompilationUnit>(), /*shouldMangle=*/true);
  j.register_attribute("training", c10::BoolType::get(), false);
  j.register_module("model", inner);
  auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  j.register_buffer("input_mean", torch::tensor(norm.mean, f64).to(torch::kFloat32));
  j.register_buffer("input_inv_std", (1.0 / torch::tensor(norm.std, f64)).to(torch::kFloat32));
  j.define(
      "def forward(self, x):\n"
      "    if not torch.is_floating_point(x):\n"
      "        x = x.to(self.input_mean.dtype)\n"
      "    shape = [1] * x.dim()\n"
      "    if x.dim() > 1:\n"
      "        shape[1] = self.input_mean.size(0)\n"
      "    x = (x - self.input_mean.view(shape)) * self.input_inv_std.view(shape)\n"
      "    return self.model.forward(x)\n");
  return j;
}

struct Exporter {
  std::string model;
  std::function<bool(const Model&)> handles;
  std::function<torch::jit::Module(const Model&)> to_jit;
};

RegisteredList<Exporter>& exporters() {
  static RegisteredList<Exporter> all(&Exporter::model);
  return all;
}

const Exporter* exporter_of(const Model& model) {
  return exporters().find_if([&](const Exporter& e) { return e.handles(model); });
}

}  // namespace

void add_torchscript_exporter(const std::string& model, std::function<bool(const Model&)> handles,
                              std::function<torch::jit::Module(const Model&)> exporter) {
  UT_CHECK(exporters().add({model, std::move(handles), std::move(exporter)}),
           "torchscript export of model '", model, "' is registered twice");
}

bool can_export_torchscript(const Model& model) { return exporter_of(model) != nullptr; }

std::string no_torchscript_text(const Model& model, const std::string& what) {
  return fmt::format(
      "torchscript export: {} has no TorchScript form (the models that have one: {}); {}", what,
      joined_names(exporters().keys(), ", "),
      model.hf_info() != nullptr
          ? "export it as --format hf, a Hugging Face folder (transformers' from_pretrained "
            "reads it), or as --format state_dict"
          : "export it as --format state_dict and load the weights into a Python twin of the "
            "model");
}

torch::jit::Module to_torchscript(const Model& model, const InputNormalization* norm) {
  const Exporter* exporter = exporter_of(model);
  if (exporter == nullptr) throw ConfigError(no_torchscript_text(model, model.name()));
  JitModule j = exporter->to_jit(model);
  if (norm) j = with_input_normalization(j, *norm);
  j.eval();
  return j;
}

void save_torchscript(const Model& model, const std::string& path, const InputNormalization* norm) {
  JitModule j = to_torchscript(model, norm);
  const std::string tmp = path + ".partial";
  try {
    j.save(tmp);
    std::filesystem::rename(tmp, path);
  } catch (const std::exception& e) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw TrainError(fmt::format("cannot write the TorchScript file {}: {}", path, error_text(e)));
  }
}

namespace torchscript {

torch::jit::Module mirror(const torch::nn::Module& module, const std::string& where) {
  return Mirror().build(module, where);
}

torch::jit::Module child(const torch::jit::Module& module, const std::string& path) {
  JitModule c = module;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    const std::string name =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    c = c.attr(name).toModule();
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return c;
}

std::string item(const std::string& list, size_t i) {
  return fmt::format("getattr(self.{}, \"{}\")", list, i);
}

std::string literal(double v) { return fmt::format("{:.17g}", v); }

}  // namespace torchscript
}  // namespace unitrain
