#include "unitrain/models/mlp.h"

#include <fmt/format.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "unitrain/core/error.h"
#include "unitrain/models/model_checks.h"
#include "unitrain/models/torchscript_export.h"

namespace unitrain::models {

void MlpOptions::declare(Options<MlpOptions>& o) {
  o.field("sizes", &MlpOptions::sizes_)
      .required()
      .help("layer widths: input, hidden..., output (at least 2 entries), e.g. [64, 256, 10]");
  o.field("activation", &MlpOptions::activation_, activation_table())
      .help("nonlinearity between layers");
  o.field("dropout", &MlpOptions::dropout_)
      .min(0)
      .max(1)
      .help("dropout after each hidden layer, < 1");
  o.field("flatten", &MlpOptions::flatten_)
      .help("flatten all but the batch dimension of the input");
  o.check(
      [](MlpOptions& m, const Config& c) { m.validate(c.path().empty() ? "" : c.path() + "."); });
}

void MlpOptions::validate(const std::string& key_prefix) const {
  UT_CHECK(sizes_.size() >= 2, key_prefix,
           "sizes must list at least 2 widths (input, hidden..., output), got ", sizes_.size());
  for (size_t i = 0; i < sizes_.size(); ++i) {
    UT_CHECK(sizes_[i] > 0, key_prefix, "sizes.", i, " must be > 0, got ", sizes_[i]);
  }
  UT_CHECK(dropout_ >= 0 && dropout_ < 1, key_prefix, "dropout must be in [0, 1), got ", dropout_);
}

MlpImpl::MlpImpl(MlpOptions options_) : options(std::move(options_)) {
  options.validate();
  layers = register_module("layers", torch::nn::ModuleList());
  const auto& sizes = options.sizes();
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    layers->push_back(torch::nn::Linear(sizes[i], sizes[i + 1]));
  }
}

torch::Tensor MlpImpl::forward(torch::Tensor x) {
  const int64_t width = options.sizes().front();
  if (options.flatten()) {
    int64_t features = 1;
    for (int64_t d = 1; d < x.dim(); ++d) features *= x.size(d);
    UT_CHECK(x.dim() >= 2 && features == width, "mlp: expected an input of shape [batch, ", width,
             "] (dims after the batch one are flattened), got ", shape_string(x));
    x = x.flatten(1);
  } else {
    UT_CHECK(x.dim() >= 1 && x.size(-1) == width, "mlp: expected an input of shape [..., ", width,
             "] (flatten is off), got ", shape_string(x));
  }
  if (!x.is_floating_point()) x = x.to(layers[0]->as<torch::nn::Linear>()->weight.scalar_type());
  const size_t n = layers->size();
  for (size_t i = 0; i < n; ++i) {
    x = layers[i]->as<torch::nn::Linear>()->forward(x);
    if (i + 1 < n) {
      x = apply_activation(options.activation(), x);
      if (options.dropout() > 0) x = torch::dropout(x, options.dropout(), is_training());
    }
  }
  return x;
}

std::vector<torch::Tensor> MlpImpl::forward_all(const std::vector<torch::Tensor>& inputs) {
  check_input_count("mlp", inputs, 1, 1);
  return forward_with_context("mlp", inputs, [&] { return std::vector{forward(inputs[0])}; });
}

void MlpImpl::pretty_print(std::ostream& stream) const {
  stream << "unitrain::models::Mlp(sizes=[";
  for (size_t i = 0; i < options.sizes().size(); ++i) {
    stream << (i ? ", " : "") << options.sizes()[i];
  }
  stream << "], activation=" << activation_name(options.activation())
         << ", dropout=" << options.dropout() << ", flatten=" << std::boolalpha << options.flatten()
         << ")";
}

Mlp mlp(std::vector<int64_t> sizes, Activation activation, double dropout, bool flatten) {
  return Mlp(MlpOptions(std::move(sizes)).activation(activation).dropout(dropout).flatten(flatten));
}

namespace {

/// The TorchScript twin of a mlp: its layers mirrored, forward written out.
torch::jit::Module export_mlp(const MlpImpl& mlp) {
  torch::jit::Module j = torchscript::mirror(mlp, "mlp");
  const auto& o = mlp.options;
  const size_t n = mlp.layers->size();
  std::string s = "def forward(self, x):\n";
  if (o.flatten()) s += "    x = torch.flatten(x, 1)\n";
  s += "    if not torch.is_floating_point(x):\n";
  s += "        x = x.to(" + torchscript::item("layers", 0) + ".weight.dtype)\n";
  for (size_t i = 0; i < n; ++i) {
    s += "    x = " + torchscript::item("layers", i) + ".forward(x)\n";
    if (i + 1 < n) s += "    x = " + activation_torchscript(o.activation(), "x") + "\n";
  }
  s += "    return x\n";
  j.define(s);
  return j;
}

}  // namespace

void register_mlp() {
  register_declared_model<MlpOptions, MlpImpl>(
      "mlp", "multilayer perceptron: Linear layers `sizes` with an activation between");
  register_torchscript_export<MlpImpl>("mlp", export_mlp);
}

}  // namespace unitrain::models
