// A test plugin: the model `sometimes_used`, a linear layer `body` plus a layer `extra` that
// takes part in every third training forward only (counted per process: one process and each
// rank of a data-parallel run count the same steps). Its parameters get no gradient in the
// other steps: distributed_test.py checks that 1 and 2 processes then train them alike.
#include <torch/torch.h>

#include "unitrain/core/error.h"
#include "unitrain/models/model.h"

namespace {

class SometimesUsed : public unitrain::Model {
 public:
  SometimesUsed(int64_t in, int64_t out) {
    body_ = register_module("body", torch::nn::Linear(in, out));
    extra_ = register_module("extra", torch::nn::Linear(out, out));
  }
  std::vector<torch::Tensor> forward_all(const std::vector<torch::Tensor>& inputs) override {
    UT_CHECK(inputs.size() == 1, "sometimes_used takes one input, got ", inputs.size());
    torch::Tensor out = body_->forward(inputs[0].flatten(1));
    if (is_training() && training_forwards_++ % 3 == 0) out = out + extra_->forward(out);
    return {out};
  }

 private:
  torch::nn::Linear body_{nullptr}, extra_{nullptr};
  int64_t training_forwards_ = 0;
};

struct SometimesUsedArgs {
  int64_t in = 0;
  int64_t out = 0;

  static void declare(unitrain::Options<SometimesUsedArgs>& o) {
    o.field("in", &SometimesUsedArgs::in).required().gt(0).help("input features");
    o.field("out", &SometimesUsedArgs::out).required().gt(0).help("outputs");
  }
};

const bool registered = [] {
  unitrain::model_registry().add<SometimesUsedArgs>(
      "sometimes_used", "a linear model whose layer `extra` joins every third step (test plugin)",
      [](const SometimesUsedArgs& a) -> unitrain::ModelPtr {
        return std::make_shared<SometimesUsed>(a.in, a.out);
      });
  return true;
}();

}  // namespace
