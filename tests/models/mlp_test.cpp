#include "unitrain/models/mlp.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/sgd_check.h"
#include "unitrain/core/error.h"
#include "unitrain/models/model.h"

namespace unitrain {
namespace {

ModelPtr make(const std::string& yaml) {
  register_builtin_models();
  return model_registry().create(Config::from_string(yaml).at("model"));
}

int64_t count(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

TEST(Mlp, LibraryFactoryNamesAndShapes) {
  struct Net : torch::nn::Module {
    Net() { net = register_module("net", models::mlp({64, 256, 10})); }
    models::Mlp net{nullptr};
  } holder;
  auto y = holder.net->forward(torch::randn({8, 64}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{8, 10}));
  std::vector<std::string> names;
  for (const auto& p : holder.named_parameters()) names.push_back(p.key());
  EXPECT_EQ(names, (std::vector<std::string>{"net.layers.0.weight", "net.layers.0.bias",
                                             "net.layers.1.weight", "net.layers.1.bias"}));
  EXPECT_EQ(count(holder), 19210);  // tests/models/param_counts.py
  EXPECT_EQ(holder.net->layers[0]->as<torch::nn::Linear>()->weight.sizes(),
            (std::vector<int64_t>{256, 64}));
}

TEST(Mlp, FromConfigWithDefaults) {
  auto m = make("model: {type: mlp, args: {sizes: [10, 7, 5, 3]}}");
  auto* mlp = dynamic_cast<models::MlpImpl*>(m.get());
  ASSERT_NE(mlp, nullptr);
  EXPECT_EQ(count(*m), 135);  // tests/models/param_counts.py
  EXPECT_EQ(mlp->options.activation(), models::Activation::ReLU);
  EXPECT_EQ(mlp->options.dropout(), 0.0);
  EXPECT_TRUE(mlp->options.flatten());
  auto out = m->forward_all({torch::randn({4, 10})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].sizes(), (std::vector<int64_t>{4, 3}));
}

TEST(Mlp, MatchesHandComputedForward) {
  auto net = models::mlp({2, 2, 1}, models::Activation::Tanh);
  torch::NoGradGuard no_grad;
  auto l0 = net->layers[0]->as<torch::nn::Linear>();
  auto l1 = net->layers[1]->as<torch::nn::Linear>();
  l0->weight.copy_(torch::tensor({{1.0f, 2.0f}, {-1.0f, 0.5f}}));
  l0->bias.copy_(torch::tensor({0.1f, -0.2f}));
  l1->weight.copy_(torch::tensor({{0.3f, -0.7f}}));
  l1->bias.copy_(torch::tensor({0.05f}));
  // x = [1, -1]: h = tanh([1 - 2 + 0.1, -1 - 0.5 - 0.2]) = tanh([-0.9, -1.7])
  double expected = 0.3 * std::tanh(-0.9) - 0.7 * std::tanh(-1.7) + 0.05;
  auto y = net->forward(torch::tensor({{1.0f, -1.0f}}));
  EXPECT_NEAR(y.item<double>(), expected, 1e-6);
}

TEST(Mlp, FlattensImagesUnlessTurnedOff) {
  auto flat = make("model: {type: mlp, args: {sizes: [12, 5]}}");
  EXPECT_EQ(flat->forward_all({torch::randn({2, 3, 4})})[0].sizes(), (std::vector<int64_t>{2, 5}));
  auto seq = make("model: {type: mlp, args: {sizes: [4, 5], flatten: false, activation: gelu}}");
  EXPECT_EQ(seq->forward_all({torch::randn({2, 3, 4})})[0].sizes(),
            (std::vector<int64_t>{2, 3, 5}));
}

TEST(Mlp, IntegerInputIsConverted) {
  auto net = models::mlp({3, 2});
  auto y = net->forward(torch::ones({2, 3}, torch::kUInt8));
  EXPECT_EQ(y.scalar_type(), torch::kFloat);
}

TEST(Mlp, DropoutOnlyInTraining) {
  torch::manual_seed(0);
  auto net = models::mlp({16, 64, 4}, models::Activation::ReLU, 0.5);
  auto x = torch::randn({8, 16});
  net->eval();
  EXPECT_TRUE(torch::equal(net->forward(x), net->forward(x)));
  net->train();
  EXPECT_FALSE(torch::equal(net->forward(x), net->forward(x)));
}

TEST(Mlp, WrongInputWidthNamesModelAndShapes) {
  auto m = make("model: {type: mlp, args: {sizes: [64, 10]}}");
  try {
    m->forward_all({torch::randn({8, 63})});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("mlp"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[batch, 64]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[8, 63]"), std::string::npos) << msg;
  }
}

TEST(Mlp, WrongInputCount) {
  auto m = make("model: {type: mlp, args: {sizes: [4, 2]}}");
  try {
    m->forward_all({torch::randn({1, 4}), torch::randn({1, 4})});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("takes 1 input tensor(s), got 2"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(m->forward_all({}), ConfigError);
}

TEST(Mlp, BadArgsNameTheKey) {
  auto expect_error = [](const std::string& yaml, const std::string& fragment) {
    try {
      make(yaml);
      ADD_FAILURE() << "expected ConfigError for " << yaml;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error("model: {type: mlp, args: {sizes: [64]}}", "model.args.sizes");
  expect_error("model: {type: mlp, args: {sizes: [64, 0]}}", "model.args.sizes.1");
  expect_error("model: {type: mlp, args: {sizes: [4, 2], activation: swish}}",
               "model.args.activation");
  expect_error("model: {type: mlp, args: {sizes: [4, 2], dropout: 1.0}}", "model.args.dropout");
  expect_error("model: {type: mlp, args: {}}", "model.args.sizes");
  EXPECT_THROW(models::mlp({5}), ConfigError);
}

TEST(Mlp, SgdLowersLoss) {
  torch::manual_seed(0);
  auto m = make("model: {type: mlp, args: {sizes: [4, 16, 3], activation: silu}}");
  auto x = torch::randn({32, 4});
  auto y = x.slice(1, 0, 3).argmax(1);
  auto [before, after] = test::sgd_losses(
      *m, [&] { return torch::cross_entropy_loss(m->forward_all({x})[0], y); }, 30, 0.1);
  EXPECT_LT(after, 0.5 * before);
}

}  // namespace
}  // namespace unitrain
