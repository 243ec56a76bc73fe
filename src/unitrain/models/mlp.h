#pragma once
// Mlp: a multilayer perceptron, usable from C++ (`models::mlp({64, 256, 10})`) and as `type: mlp`.
#include <torch/arg.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/models/activation.h"
#include "unitrain/models/model.h"

namespace unitrain::models {

/// Registers `mlp`: its factory (`model: {type: mlp}`) and its TorchScript export (called by
/// register_builtin_models()).
void register_mlp();

/// Options of an Mlp, with chained setters: `MlpOptions({64, 256, 10}).dropout(0.1)`.
struct MlpOptions {
  /* implicit */ MlpOptions(std::vector<int64_t> sizes) : sizes_(std::move(sizes)) {}  // NOLINT
  /// Input, hidden..., output widths; at least two entries, each > 0.
  TORCH_ARG(std::vector<int64_t>, sizes);
  TORCH_ARG(Activation, activation) = Activation::ReLU;
  /// Dropout probability after each hidden activation, in [0, 1).
  TORCH_ARG(double, dropout) = 0.0;
  /// Flatten every dimension but the first (batch) one before the first layer; when false the
  /// layers apply to the last dimension and any leading dimensions are kept.
  TORCH_ARG(bool, flatten) = true;

 public:
  /// Declares the args (key, range, help; defaults are the fields' own): the model
  /// registry's schema and parser (options_of<MlpOptions>()).
  static void declare(Options<MlpOptions>& o);
  /// The defaults declare() starts from (sizes is required).
  static MlpOptions option_defaults() { return MlpOptions(std::vector<int64_t>{}); }
  /// ConfigError naming `<key_prefix><key>` when an option is out of range.
  void validate(const std::string& key_prefix = "") const;
};

/// A stack of Linear layers sizes[0] -> sizes[1] -> ... -> sizes.back() with the activation
/// (then dropout) between layers and nothing after the last one. Parameters are named
/// `layers.<i>.weight` and `layers.<i>.bias`, i = 0 .. sizes.size() - 2.
/// forward: x [B, ...] whose trailing dims hold sizes[0] values (or [..., sizes[0]] without
/// flatten) -> [B, sizes.back()]. Another input width is a ConfigError naming both shapes.
/// An integer input is converted to the weights' dtype.
class MlpImpl : public Model {
 public:
  explicit MlpImpl(MlpOptions options);

  torch::Tensor forward(torch::Tensor x);
  /// One input, one prediction.
  std::vector<torch::Tensor> forward_all(const std::vector<torch::Tensor>& inputs) override;
  void pretty_print(std::ostream& stream) const override;

  MlpOptions options;
  torch::nn::ModuleList layers{nullptr};
};

/// A shared_ptr-like holder of MlpImpl, as torch::nn::Linear holds LinearImpl.
TORCH_MODULE(Mlp);

/// Builds an Mlp: `register_module("net", unitrain::models::mlp({64, 256, 10}))`.
Mlp mlp(std::vector<int64_t> sizes, Activation activation = Activation::ReLU, double dropout = 0.0,
        bool flatten = true);

}  // namespace unitrain::models
