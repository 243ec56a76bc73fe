// A plugin: build it as a shared library and pass it with `--plugin`; its static initializer
// registers the model `gated_mlp`, which a YAML file can then name like any built-in.
//   unitrain train examples/plugin/digits_gated.yaml --plugin
//   build/examples/libunitrain_example_plugin.so
#include <torch/torch.h>

#include "unitrain/core/error.h"
#include "unitrain/models/model.h"

namespace {

// x -> (W1 x) * sigmoid(W2 x) -> W3: a gated linear unit network.
class GatedMlp : public unitrain::Model {
 public:
  GatedMlp(int64_t in, int64_t hidden, int64_t out) {
    value_ = register_module("value", torch::nn::Linear(in, hidden));
    gate_ = register_module("gate", torch::nn::Linear(in, hidden));
    head_ = register_module("head", torch::nn::Linear(hidden, out));
  }
  std::vector<torch::Tensor> forward_all(const std::vector<torch::Tensor>& inputs) override {
    UT_CHECK(inputs.size() == 1, "gated_mlp takes one input, got ", inputs.size());
    auto x = inputs[0].flatten(1);
    return {head_->forward(value_->forward(x) * torch::sigmoid(gate_->forward(x)))};
  }

 private:
  torch::nn::Linear value_{nullptr}, gate_{nullptr}, head_{nullptr};
};

// Its args, each declared once next to the field it fills: key, range, help; the default is the
// field's own (in and out have none: they must be given).
struct GatedMlpArgs {
  int64_t in = 0;
  int64_t hidden = 128;
  int64_t out = 0;

  static void declare(unitrain::Options<GatedMlpArgs>& o) {
    o.field("in", &GatedMlpArgs::in).required().gt(0).help("input features");
    o.field("hidden", &GatedMlpArgs::hidden).gt(0).help("gated hidden units");
    o.field("out", &GatedMlpArgs::out).required().gt(0).help("outputs");
  }
};

const bool registered = [] {
  unitrain::model_registry().add<GatedMlpArgs>(
      "gated_mlp", "an MLP with one gated (GLU) hidden layer (example plugin)",
      [](const GatedMlpArgs& a) -> unitrain::ModelPtr {
        return std::make_shared<GatedMlp>(a.in, a.hidden, a.out);
      });
  return true;
}();

}  // namespace
