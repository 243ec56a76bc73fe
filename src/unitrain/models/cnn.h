#pragma once
// Cnn: a LeNet-style convnet for images, usable from C++ and as `type: cnn`.
#include <torch/arg.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/models/model.h"

namespace unitrain::models {

/// Registers `cnn`: its factory and its TorchScript export (called by
/// register_builtin_models()).
void register_cnn();

/// Options of a Cnn, with chained setters: `CnnOptions().channels({16, 32}).classes(10)`.
struct CnnOptions {
  TORCH_ARG(int64_t, in_channels) = 1;
  /// [H, W] of the input images.
  TORCH_ARG(std::vector<int64_t>, image_size) = {28, 28};
  /// One block per entry: conv 3x3 (padding 1) with that many channels, [batch norm], ReLU,
  /// max-pool 2x2.
  TORCH_ARG(std::vector<int64_t>, channels) = {32, 64};
  TORCH_ARG(bool, batch_norm) = false;
  /// Width of the fully connected layer after the conv blocks.
  TORCH_ARG(int64_t, hidden) = 128;
  TORCH_ARG(int64_t, classes) = 10;
  /// Dropout before the hidden and before the output layer, in [0, 1).
  TORCH_ARG(double, dropout) = 0.25;
  /// The conv blocks' images in channels-last memory layout (NHWC): the same values, and on
  /// GPUs with tensor cores usually faster convolutions (cuDNN's NHWC kernels).
  TORCH_ARG(bool, channels_last) = false;

 public:
  /// Declares the args (key, range, help; defaults are the fields' own): the model
  /// registry's schema and parser (options_of<CnnOptions>()).
  static void declare(Options<CnnOptions>& o);
  /// ConfigError naming `<key_prefix><key>` when an option is out of range.
  void validate(const std::string& key_prefix = "") const;
  /// H and W after every conv block (each max-pool halves them, rounding down).
  std::vector<int64_t> feature_size() const;
};

/// conv blocks -> flatten -> dropout -> Linear(hidden) -> ReLU -> dropout -> Linear(classes).
/// Parameters: `convs.<i>.weight/bias`, `norms.<i>.weight/bias` (with batch_norm, which also
/// drops the conv biases), `fc.weight/bias`, `head.weight/bias`.
/// forward: images [B, C, H, W] (also [B, H, W] when C = 1, or flat [B, C*H*W]) -> logits
/// [B, classes]. Another shape is a ConfigError naming the expected and actual shapes.
class CnnImpl : public Model {
 public:
  explicit CnnImpl(CnnOptions options = {});

  torch::Tensor forward(torch::Tensor x);
  /// One input, one prediction.
  std::vector<torch::Tensor> forward_all(const std::vector<torch::Tensor>& inputs) override;

  CnnOptions options;
  torch::nn::ModuleList convs{nullptr};
  torch::nn::ModuleList norms{nullptr};  ///< null without batch_norm
  torch::nn::Linear fc{nullptr};
  torch::nn::Linear head{nullptr};
};

/// A shared_ptr-like holder of CnnImpl.
TORCH_MODULE(Cnn);

}  // namespace unitrain::models
