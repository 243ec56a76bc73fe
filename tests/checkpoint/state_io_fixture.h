#pragma once

// The small network and fixture the checkpoint state tests share (state_io_test.cpp,
// optimizer_files_test.cpp).

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "unitrain/optim/optimizer.h"

namespace unitrain {
namespace {

struct Net : torch::nn::Module {
  explicit Net(int64_t in = 4, int64_t out = 3) {
    fc = register_module("fc", torch::nn::Linear(in, out));
    bn = register_module("bn", torch::nn::BatchNorm1d(out));
  }
  torch::Tensor forward(const torch::Tensor& x) { return bn->forward(fc->forward(x)); }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};

std::vector<char> as_bytes(const std::string& s) { return {s.begin(), s.end()}; }

/// The optimizer files hold PyTorch's layout for the optimizers whose state serializers are
/// registered: the built-ins register theirs with their factories.
class StateIo : public ::testing::Test {
 protected:
  void SetUp() override { register_builtin_optimizers(); }
};

/// Trains `net` one step with `opt` on a fixed batch.
void train_step(Net& net, torch::optim::Optimizer& opt, int seed) {
  torch::manual_seed(seed);
  opt.zero_grad();
  net.forward(torch::randn({8, 4})).pow(2).mean().backward();
  opt.step();
}

void expect_same_parameters(Net& a, Net& b) {
  auto pa = a.named_parameters();
  auto pb = b.named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(torch::equal(pa[i].value(), pb[i].value())) << pa[i].key();
  }
}

}  // namespace
}  // namespace unitrain
