#include "unitrain/models/cnn.h"

#include <fmt/format.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "unitrain/core/error.h"
#include "unitrain/models/model_checks.h"
#include "unitrain/models/torchscript_export.h"

namespace unitrain::models {

void CnnOptions::declare(Options<CnnOptions>& o) {
  using T = CnnOptions;
  o.field("in_channels", &T::in_channels_).min(1).help("channels of the input images");
  o.field("image_size", &T::image_size_).help("[H, W] of the input images");
  o.field("channels", &T::channels_)
      .help("output channels of each conv3x3 + ReLU + maxpool2 block");
  o.field("batch_norm", &T::batch_norm_).help("batch norm after each convolution");
  o.field("hidden", &T::hidden_).min(1).help("width of the fully connected hidden layer");
  o.field("classes", &T::classes_).min(1).help("number of output logits");
  o.field("dropout", &T::dropout_)
      .min(0)
      .max(1)
      .help("dropout before the hidden and the output layer, < 1");
  o.field("channels_last", &T::channels_last_)
      .help(
          "the conv blocks' images in channels-last memory layout (NHWC): the same values; on "
          "GPUs with tensor cores usually faster convolutions (measure: docs/performance.md)");
  o.check([](T& m, const Config& c) { m.validate(c.path().empty() ? "" : c.path() + "."); });
}

void CnnOptions::validate(const std::string& key_prefix) const {
  const std::string& p = key_prefix;
  UT_CHECK(in_channels_ > 0, p, "in_channels must be > 0, got ", in_channels_);
  UT_CHECK(image_size_.size() == 2, p, "image_size must be [H, W], got ", image_size_.size(),
           " entries");
  UT_CHECK(!channels_.empty(), p, "channels must list at least one conv block");
  for (size_t i = 0; i < channels_.size(); ++i) {
    UT_CHECK(channels_[i] > 0, p, "channels.", i, " must be > 0, got ", channels_[i]);
  }
  const int64_t need = int64_t{1} << channels_.size();
  for (size_t i = 0; i < 2; ++i) {
    UT_CHECK(image_size_[i] >= need, p, "image_size.", i, " must be >= ", need, " for ",
             channels_.size(), " conv blocks (each max-pool halves H and W), got ", image_size_[i]);
  }
  UT_CHECK(hidden_ > 0, p, "hidden must be > 0, got ", hidden_);
  UT_CHECK(classes_ > 0, p, "classes must be > 0, got ", classes_);
  UT_CHECK(dropout_ >= 0 && dropout_ < 1, p, "dropout must be in [0, 1), got ", dropout_);
}

std::vector<int64_t> CnnOptions::feature_size() const {
  std::vector<int64_t> hw = image_size_;
  for (size_t i = 0; i < channels_.size(); ++i) {
    for (auto& d : hw) d /= 2;
  }
  return hw;
}

CnnImpl::CnnImpl(CnnOptions options_) : options(std::move(options_)) {
  options.validate();
  convs = register_module("convs", torch::nn::ModuleList());
  if (options.batch_norm()) norms = register_module("norms", torch::nn::ModuleList());
  int64_t in = options.in_channels();
  for (int64_t out : options.channels()) {
    convs->push_back(torch::nn::Conv2d(
        torch::nn::Conv2dOptions(in, out, 3).padding(1).bias(!options.batch_norm())));
    if (options.batch_norm()) norms->push_back(torch::nn::BatchNorm2d(out));
    in = out;
  }
  auto hw = options.feature_size();
  fc = register_module("fc", torch::nn::Linear(in * hw[0] * hw[1], options.hidden()));
  head = register_module("head", torch::nn::Linear(options.hidden(), options.classes()));
}

torch::Tensor CnnImpl::forward(torch::Tensor x) {
  const int64_t c = options.in_channels(), h = options.image_size()[0], w = options.image_size()[1];
  if (x.dim() == 2 && x.size(1) == c * h * w) {
    x = x.view({x.size(0), c, h, w});
  } else if (x.dim() == 3 && c == 1 && x.size(1) == h && x.size(2) == w) {
    x = x.unsqueeze(1);
  }
  UT_CHECK(x.dim() == 4 && x.size(1) == c && x.size(2) == h && x.size(3) == w,
           "cnn: expected images of shape [batch, ", c, ", ", h, ", ", w, "]",
           c == 1 ? " (or [batch, " + std::to_string(h) + ", " + std::to_string(w) + "])" : "",
           " or flat [batch, ", c * h * w, "], got ", shape_string(x),
           "; set model.args.in_channels / image_size to match the data");
  if (!x.is_floating_point()) x = x.to(fc->weight.scalar_type());
  if (options.channels_last()) x = x.contiguous(torch::MemoryFormat::ChannelsLast);
  for (size_t i = 0; i < convs->size(); ++i) {
    x = convs[i]->as<torch::nn::Conv2d>()->forward(x);
    if (norms) x = norms[i]->as<torch::nn::BatchNorm2d>()->forward(x);
    x = torch::max_pool2d(torch::relu(x), 2);
  }
  x = x.flatten(1);
  if (options.dropout() > 0) x = torch::dropout(x, options.dropout(), is_training());
  x = torch::relu(fc->forward(x));
  if (options.dropout() > 0) x = torch::dropout(x, options.dropout(), is_training());
  return head->forward(x);
}

std::vector<torch::Tensor> CnnImpl::forward_all(const std::vector<torch::Tensor>& inputs) {
  check_input_count("cnn", inputs, 1, 1);
  return forward_with_context("cnn", inputs, [&] { return std::vector{forward(inputs[0])}; });
}

namespace {

/// The TorchScript twin of a cnn: its layers mirrored, forward written out.
torch::jit::Module export_cnn(const CnnImpl& cnn) {
  torch::jit::Module j = torchscript::mirror(cnn, "cnn");
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
    s += "    x = " + torchscript::item("convs", i) + ".forward(x)\n";
    if (cnn.norms) s += "    x = " + torchscript::item("norms", i) + ".forward(x)\n";
    s += "    x = torch.max_pool2d(torch.relu(x), [2, 2])\n";
  }
  s += "    x = torch.flatten(x, 1)\n";
  s += "    x = torch.relu(self.fc.forward(x))\n";
  s += "    return self.head.forward(x)\n";
  j.define(s);
  return j;
}

}  // namespace

void register_cnn() {
  register_declared_model<CnnOptions, CnnImpl>(
      "cnn", "LeNet-style convnet: conv3x3+ReLU+maxpool blocks, then 2 Linear layers");
  register_torchscript_export<CnnImpl>("cnn", export_cnn);
}

}  // namespace unitrain::models
