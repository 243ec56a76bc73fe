// A plugin: build it as a shared library and pass it with `--plugin`; its static initializer
// registers the model `gated_mlp`, which a YAML file can then name like any built-in.
//   unitrain train examples/plugin/digits_gated.yaml --plugin build/examples/libunitrain_example_plugin.so
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

const bool registered = [] {
  unitrain::Schema args;
  args.add("in", unitrain::Type::Int).gt(0).help("input features");
  args.add("hidden", unitrain::Type::Int).def(128).gt(0).help("gated hidden units");
  args.add("out", unitrain::Type::Int).gt(0).help("outputs");
  unitrain::model_registry().add(
      "gated_mlp", "an MLP with one gated (GLU) hidden layer (example plugin)", args,
      [](const unitrain::Config& a) -> unitrain::ModelPtr {
        return std::make_shared<GatedMlp>(a.get_int("in"), a.get_int("hidden"), a.get_int("out"));
      });
  return true;
}();

}  // namespace
