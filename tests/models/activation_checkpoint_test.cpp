#include "unitrain/models/activation_checkpoint.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "unitrain/core/config.h"
#include "unitrain/models/model.h"
#include "unitrain/models/transformer_lm.h"
#include "unitrain/precision/autocast_scope.h"

namespace unitrain {
namespace {

/// Linear -> GELU -> dropout -> Linear: a block whose recomputation must replay the dropout mask.
struct DropoutBlock : torch::nn::Module {
  DropoutBlock() {
    torch::manual_seed(3);
    fc = register_module("fc", torch::nn::Linear(8, 16));
    proj = register_module("proj", torch::nn::Linear(16, 8));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return proj->forward(torch::dropout(torch::gelu(fc->forward(x)), 0.5, is_training()));
  }
  torch::nn::Linear fc{nullptr}, proj{nullptr};
};

struct Grads {
  torch::Tensor loss, input, after;  ///< `after`: a draw from the generator after backward
  std::vector<torch::Tensor> params;
};

Grads run_block(bool checkpoint, bool input_requires_grad) {
  auto block = std::make_shared<DropoutBlock>();
  torch::manual_seed(11);
  auto x = torch::randn({4, 8}).requires_grad_(input_requires_grad);
  torch::Tensor y;
  if (checkpoint) {
    y = checkpointed([block](const torch::Tensor& t) { return block->forward(t); }, x);
  } else {
    y = block->forward(x);
  }
  auto loss = (y * y).sum();
  loss.backward();
  Grads g{loss.detach(), input_requires_grad ? x.grad() : torch::Tensor(), torch::rand({4}), {}};
  for (const auto& p : block->parameters()) g.params.push_back(p.grad().clone());
  return g;
}

void expect_same(const Grads& a, const Grads& b) {
  EXPECT_TRUE(torch::equal(a.loss, b.loss));
  if (a.input.defined() || b.input.defined()) EXPECT_TRUE(torch::equal(a.input, b.input));
  EXPECT_TRUE(torch::equal(a.after, b.after)) << "the generator did not go on where it was";
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    EXPECT_TRUE(torch::equal(a.params[i], b.params[i])) << "parameter " << i;
  }
}

TEST(ActivationCheckpoint, GradientsEqualThoseWithoutAndDropoutIsReplayed) {
  expect_same(run_block(true, true), run_block(false, true));
}

TEST(ActivationCheckpoint, ParametersGetGradientsWhenNoInputRequiresOne) {
  const Grads with = run_block(true, false);
  expect_same(with, run_block(false, false));
  EXPECT_GT(with.params[0].abs().sum().item<double>(), 0);
}

TEST(ActivationCheckpoint, KeepsOnlyItsInputsAndRecomputesInBackward) {
  int calls = 0;
  auto w = torch::randn({3, 3}).requires_grad_(true);
  auto x = torch::randn({2, 3}).requires_grad_(true);
  auto fn = [&calls, w](const std::vector<torch::Tensor>& in) {
    ++calls;
    auto h = torch::tanh(in[0].matmul(w));
    return std::vector<torch::Tensor>{h * in[1], h.argmax(1)};
  };
  auto z = torch::randn({2, 3}).requires_grad_(true);
  auto out = checkpointed(fn, {x, z});
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].requires_grad());
  EXPECT_FALSE(out[1].requires_grad());  // an integer output: no gradient
  out[0].sum().backward();
  EXPECT_EQ(calls, 2);  // recomputed once, in backward

  auto w2 = w.detach().clone().requires_grad_(true);
  auto x2 = x.detach().clone().requires_grad_(true);
  auto z2 = z.detach().clone().requires_grad_(true);
  (torch::tanh(x2.matmul(w2)) * z2).sum().backward();
  EXPECT_TRUE(torch::equal(w.grad(), w2.grad()));
  EXPECT_TRUE(torch::equal(x.grad(), x2.grad()));
  EXPECT_TRUE(torch::equal(z.grad(), z2.grad()));
}

TEST(ActivationCheckpoint, WithoutGradModeItJustRuns) {
  int calls = 0;
  torch::NoGradGuard no_grad;
  auto y = checkpointed(
      [&calls](const torch::Tensor& t) {
        ++calls;
        return t * 2;
      },
      torch::ones({2}).requires_grad_(true));
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(y.requires_grad());
}

TEST(ActivationCheckpoint, ReplaysAutocast) {
  auto run = [](bool checkpoint) {
    auto block = std::make_shared<DropoutBlock>();
    torch::manual_seed(5);
    auto x = torch::randn({4, 8}).requires_grad_(true);
    torch::Tensor loss;
    {
      AutocastScope autocast(true, c10::DeviceType::CPU, c10::ScalarType::BFloat16);
      auto y = checkpoint
                   ? checkpointed([block](const torch::Tensor& t) { return block->forward(t); }, x)
                   : block->forward(x);
      EXPECT_EQ(y.scalar_type(), c10::ScalarType::BFloat16);
      loss = y.to(torch::kFloat).pow(2).sum();
    }
    loss.backward();  // outside the scope, as the training loop runs it
    return std::make_pair(x.grad(), block->fc->weight.grad());
  };
  auto [x1, w1] = run(true);
  auto [x2, w2] = run(false);
  EXPECT_TRUE(torch::equal(x1, x2));
  EXPECT_TRUE(torch::equal(w1, w2));
}

/// A few SGD steps of a transformer_lm with dropout: losses and weights after.
std::vector<torch::Tensor> train_lm(int64_t every) {
  register_builtin_models();
  torch::manual_seed(0);
  auto m = model_registry().create(
      Config::from_string("model: {type: transformer_lm, args: {vocab: 40, d_model: 32, layers: 3, "
                          "heads: 4, seq_len: 12, dropout: 0.2}}")
          .at("model"));
  if (every > 0) EXPECT_TRUE(m->checkpoint_activations(every));
  m->train();
  torch::optim::SGD sgd(m->parameters(), torch::optim::SGDOptions(0.1));
  std::vector<torch::Tensor> out;
  for (int step = 0; step < 3; ++step) {
    auto tokens = torch::randint(40, {4, 12});
    auto logits = m->forward_all({tokens})[0];
    auto loss = torch::cross_entropy_loss(logits.reshape({-1, 40}), tokens.roll(1, 1).reshape(-1));
    sgd.zero_grad();
    loss.backward();
    sgd.step();
    out.push_back(loss.detach());
  }
  for (const auto& p : m->parameters()) out.push_back(p.detach().clone());
  return out;
}

TEST(ActivationCheckpoint, TransformerLmTrainsBitwiseAsWithout) {
  const auto plain = train_lm(0);
  for (int64_t every : {1, 2}) {
    const auto with = train_lm(every);
    ASSERT_EQ(with.size(), plain.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_TRUE(torch::equal(with[i], plain[i])) << "every " << every << ", tensor " << i;
    }
  }
}

TEST(ActivationCheckpoint, ModelsWithoutBlocksSayNo) {
  register_builtin_models();
  auto mlp = model_registry().create(
      Config::from_string("model: {type: mlp, args: {sizes: [4, 2]}}").at("model"));
  EXPECT_FALSE(mlp->checkpoint_activations(1));
  EXPECT_TRUE(mlp->checkpoint_activations(0));
}

}  // namespace
}  // namespace unitrain
