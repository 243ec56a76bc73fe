#include "unitrain/engine/callbacks/model_summary.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_util.h"

namespace unitrain {
namespace {

struct Net : torch::nn::Module {
  Net() {
    body = register_module(
        "body", torch::nn::Sequential(torch::nn::Linear(10, 20), torch::nn::Linear(20, 5)));
    head = register_module("head", torch::nn::Linear(5, 2));
    head->weight.set_requires_grad(false);
  }
  torch::nn::Sequential body{nullptr};
  torch::nn::Linear head{nullptr};
};

TEST(ModelSummary, CountsTrainableAndFrozenPerModuleToTheDepthAsked) {
  Net net;
  const std::string one = model_summary(net, 1);
  EXPECT_TRUE(test::contains(one, "body")) << one;
  EXPECT_FALSE(test::contains(one, "body.0")) << one;  // deeper than 1
  EXPECT_TRUE(test::contains(one, "337 parameters: 327 trainable, 10 frozen; 1.3 KB")) << one;
  const std::string two = model_summary(net, 2);
  EXPECT_TRUE(test::contains(two, "body.0")) << two;
  EXPECT_TRUE(test::contains(two, "body.1")) << two;
  // head: 10 weights frozen, 2 biases trainable.
  EXPECT_NE(two.find("head"), std::string::npos);
  EXPECT_TRUE(test::contains(two.substr(two.find("head")), "12           2          10")) << two;
}

}  // namespace
}  // namespace unitrain
