#include "unitrain/models/torchscript_export.h"

#include <fmt/format.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>

#include "unitrain/core/error.h"
#include "unitrain/models/cnn.h"
#include "unitrain/models/mlp.h"
#include "unitrain/models/torchscript_model.h"
#include "unitrain/models/transformer_lm.h"

namespace unitrain {
namespace {

using JitModule = torch::jit::Module;

/// `getattr(self.<list>, "<i>")`: a child of a ModuleList (its name is a number, which
/// TorchScript source cannot spell as an attribute).
std::string item(const std::string& list, size_t i) {
  return fmt::format("getattr(self.{}, \"{}\")", list, i);
}

std::string int_list(c10::ArrayRef<int64_t> values) {
  return fmt::format("[{}]", fmt::join(values, ", "));
}

/// A double written so that TorchScript reads back the same value.
std::string literal(double v) { return fmt::format("{:.17g}", v); }

std::string activation_source(models::Activation a, const std::string& x) {
  switch (a) {
    case models::Activation::ReLU: return "torch.relu(" + x + ")";
    case models::Activation::GELU: return "torch.gelu(" + x + ")";
    case models::Activation::Tanh: return "torch.tanh(" + x + ")";
    case models::Activation::Sigmoid: return "torch.sigmoid(" + x + ")";
    case models::Activation::SiLU: return "torch.silu(" + x + ")";
  }
  throw ConfigError("torchscript export: unknown activation");
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
    const auto* padding = c10::get_if<torch::ExpandingArray<2>>(&o.padding());
    UT_CHECK(padding != nullptr && c10::holds_alternative<torch::enumtype::kZeros>(o.padding_mode()),
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
                      literal(o.eps()));
  }
  if (const auto* ln = m.as<torch::nn::LayerNorm>()) {
    const auto& o = ln->options;
    return head + fmt::format("torch.layer_norm(x, {}, {}, {}, {}, False)\n",
                              int_list(o.normalized_shape()),
                              o.elementwise_affine() ? "self.weight" : "None",
                              o.elementwise_affine() ? "self.bias" : "None", literal(o.eps()));
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
  std::shared_ptr<torch::jit::CompilationUnit> cu_ = std::make_shared<torch::jit::CompilationUnit>();
};

JitModule child(const JitModule& m, const std::string& path) {
  JitModule c = m;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    const std::string name = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    c = c.attr(name).toModule();
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return c;
}

JitModule export_mlp(const models::MlpImpl& mlp) {
  JitModule j = Mirror().build(mlp, "mlp");
  const auto& o = mlp.options;
  const size_t n = mlp.layers->size();
  std::string s = "def forward(self, x):\n";
  if (o.flatten()) s += "    x = torch.flatten(x, 1)\n";
  s += "    if not torch.is_floating_point(x):\n";
  s += "        x = x.to(" + item("layers", 0) + ".weight.dtype)\n";
  for (size_t i = 0; i < n; ++i) {
    s += "    x = " + item("layers", i) + ".forward(x)\n";
    if (i + 1 < n) s += "    x = " + activation_source(o.activation(), "x") + "\n";
  }
  s += "    return x\n";
  j.define(s);
  return j;
}

JitModule export_cnn(const models::CnnImpl& cnn) {
  JitModule j = Mirror().build(cnn, "cnn");
  const auto& o = cnn.options;
  const int64_t c = o.in_channels(), h = o.image_size()[0], w = o.image_size()[1];
  std::string s = "def forward(self, x):\n";
  s += fmt::format("    if x.dim() == 2 and x.size(1) == {}:\n", c * h * w);
  s += fmt::format("        x = x.view([x.size(0), {}, {}, {}])\n", c, h, w);
  if (c == 1) {
    s += fmt::format("    elif x.dim() == 3 and x.size(1) == {} and x.size(2) == {}:\n", h, w);
    s += "        x = x.unsqueeze(1)\n";
  }
  s += "    if not torch.is_floating_point(x):\n";
  s += "        x = x.to(self.fc.weight.dtype)\n";
  for (size_t i = 0; i < cnn.convs->size(); ++i) {
    s += "    x = " + item("convs", i) + ".forward(x)\n";
    if (cnn.norms) s += "    x = " + item("norms", i) + ".forward(x)\n";
    s += "    x = torch.max_pool2d(torch.relu(x), [2, 2])\n";
  }
  s += "    x = torch.flatten(x, 1)\n";
  s += "    x = torch.relu(self.fc.forward(x))\n";
  s += "    return self.head.forward(x)\n";
  j.define(s);
  return j;
}

JitModule export_transformer(const models::TransformerLmImpl& lm) {
  JitModule j = Mirror().build(lm, "transformer_lm");
  const auto& o = lm.options;
  const int64_t heads = o.heads(), head_dim = o.d_model() / o.heads();
  for (size_t i = 0; i < lm.blocks->size(); ++i) {
    const std::string block = "blocks." + std::to_string(i);
    child(j, block + ".attention").define(fmt::format(
        "def forward(self, x):\n"
        "    b = x.size(0)\n"
        "    t = x.size(1)\n"
        "    c = x.size(2)\n"
        "    qkv = self.qkv.forward(x).view([b, t, 3, {heads}, {head_dim}]).permute([2, 0, 3, 1, 4])\n"
        "    q = qkv[0]\n"
        "    k = qkv[1]\n"
        "    v = qkv[2]\n"
        "    scores = torch.matmul(q, k.transpose(-2, -1)) / {scale}\n"
        "    future = torch.ones([t, t], device=x.device).triu(1) != 0\n"
        "    scores = scores.masked_fill(future, float('-inf'))\n"
        "    y = torch.matmul(torch.softmax(scores, -1), v).transpose(1, 2).reshape([b, t, c])\n"
        "    return self.out.forward(y)\n",
        fmt::arg("heads", heads), fmt::arg("head_dim", head_dim),
        fmt::arg("scale", literal(std::sqrt(static_cast<double>(head_dim))))));
    child(j, block + ".feed_forward")
        .define("def forward(self, x):\n"
                "    return self.proj.forward(torch.gelu(self.fc.forward(x)))\n");
    child(j, block).define(
        "def forward(self, x):\n"
        "    x = x + self.attention.forward(self.norm1.forward(x))\n"
        "    return x + self.feed_forward.forward(self.norm2.forward(x))\n");
  }
  std::string s = "def forward(self, tokens):\n";
  // (torch.long cannot be named here: TorchScript compiled from C++ resolves no Python
  // names; arange of an int is int64.)
  s += "    positions = torch.arange(tokens.size(1), device=tokens.device)\n";
  s += "    tokens = tokens.to(positions.dtype)\n";
  s += "    x = self.token_embedding.forward(tokens) + self.position_embedding.forward(positions)\n";
  for (size_t i = 0; i < lm.blocks->size(); ++i) s += "    x = " + item("blocks", i) + ".forward(x)\n";
  s += "    return self.head.forward(self.norm.forward(x))\n";
  j.define(s);
  return j;
}

/// `inner` behind the input normalisation of `norm` (the arithmetic of NormalizeDataset, in
/// float32, so that the exported module sees what the model saw in training).
JitModule with_input_normalization(const JitModule& inner, const InputNormalization& norm) {
  UT_CHECK(!norm.mean.empty() && norm.mean.size() == norm.std.size(),
           "torchscript export: the input normalisation needs one mean and one std per channel, "
           "got ", norm.mean.size(), " and ", norm.std.size());
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

}  // namespace

bool can_export_torchscript(const Model& model) {
  return dynamic_cast<const models::MlpImpl*>(&model) != nullptr ||
         dynamic_cast<const models::CnnImpl*>(&model) != nullptr ||
         dynamic_cast<const models::TransformerLmImpl*>(&model) != nullptr ||
         dynamic_cast<const models::TorchScriptModel*>(&model) != nullptr;
}

torch::jit::Module to_torchscript(const Model& model, const InputNormalization* norm) {
  JitModule j;
  if (const auto* mlp = dynamic_cast<const models::MlpImpl*>(&model)) {
    j = export_mlp(*mlp);
  } else if (const auto* cnn = dynamic_cast<const models::CnnImpl*>(&model)) {
    j = export_cnn(*cnn);
  } else if (const auto* lm = dynamic_cast<const models::TransformerLmImpl*>(&model)) {
    j = export_transformer(*lm);
  } else if (const auto* ts = dynamic_cast<const models::TorchScriptModel*>(&model)) {
    j = ts->jit_module().clone();
  } else {
    throw ConfigError(fmt::format(
        "torchscript export: the model {} is not a built-in or TorchScript model; export it as "
        "--format state_dict and load the weights into a Python twin of the model",
        model.name()));
  }
  if (norm) j = with_input_normalization(j, *norm);
  j.eval();
  return j;
}

void save_torchscript(const Model& model, const std::string& path,
                      const InputNormalization* norm) {
  JitModule j = to_torchscript(model, norm);
  const std::string tmp = path + ".partial";
  try {
    j.save(tmp);
    std::filesystem::rename(tmp, path);
  } catch (const std::exception& e) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw TrainError(fmt::format("cannot write the TorchScript file {}: {}", path, e.what()));
  }
}

}  // namespace unitrain
