#include "unitrain/models/cnn.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/sgd_check.h"
#include "unitrain/core/error.h"
#include "unitrain/models/model.h"

namespace unitrain {
namespace {

ModelPtr make_model(const std::string& yaml) {
  register_builtin_models();
  return model_registry().create(Config::from_string(yaml).at("model"));
}

int64_t parameter_count(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

std::vector<std::string> parameter_names(const torch::nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& p : m.named_parameters()) out.push_back(p.key());
  return out;
}

TEST(Cnn, DefaultsFashionMnistShape) {
  auto m = make_model("model: {type: cnn}");
  EXPECT_EQ(parameter_count(*m), 421642);  // tests/models/param_counts.py
  EXPECT_EQ(
      parameter_names(*m),
      (std::vector<std::string>{"convs.0.weight", "convs.0.bias", "convs.1.weight", "convs.1.bias",
                                "fc.weight", "fc.bias", "head.weight", "head.bias"}));
  auto* cnn = dynamic_cast<models::CnnImpl*>(m.get());
  ASSERT_NE(cnn, nullptr);
  EXPECT_DOUBLE_EQ(cnn->options.dropout(), 0.25);
  EXPECT_EQ(cnn->fc->weight.sizes(), (std::vector<int64_t>{128, 64 * 7 * 7}));
  auto out = m->forward_all({torch::randn({3, 1, 28, 28})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].sizes(), (std::vector<int64_t>{3, 10}));
}

TEST(Cnn, ChannelsLastComputesTheSameLogitsAndGradients) {
  // model.args.channels_last changes the images' memory layout, not the values: the same
  // weights give the same logits and gradients, which keep the parameters' layout.
  torch::manual_seed(2);
  auto a =
      make_model("model: {type: cnn, args: {channels: [8, 16], batch_norm: true, dropout: 0}}");
  auto b = make_model(
      "model: {type: cnn, args: {channels: [8, 16], batch_norm: true, dropout: 0, "
      "channels_last: true}}");
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < a->parameters().size(); ++i) {
      b->parameters()[i].copy_(a->parameters()[i]);
    }
  }
  const torch::Tensor x = torch::randn({4, 1, 28, 28});
  const torch::Tensor la = a->forward_all({x})[0], lb = b->forward_all({x})[0];
  EXPECT_TRUE(torch::allclose(la, lb, 1e-5, 1e-5)) << (la - lb).abs().max();
  la.pow(2).sum().backward();
  lb.pow(2).sum().backward();
  for (size_t i = 0; i < a->parameters().size(); ++i) {
    const torch::Tensor ga = a->parameters()[i].grad(), gb = b->parameters()[i].grad();
    EXPECT_TRUE(torch::allclose(ga, gb, 1e-4, 1e-5)) << i << ": " << (ga - gb).abs().max();
    EXPECT_TRUE(gb.is_contiguous()) << i;
  }
}

TEST(Cnn, AcceptsUnbatchedChannelAndFlatImages) {
  auto m = make_model("model: {type: cnn, args: {channels: [4], hidden: 8}}");
  m->eval();
  torch::manual_seed(0);
  auto x = torch::randn({2, 1, 28, 28});
  auto ref = m->forward_all({x})[0];
  EXPECT_TRUE(torch::allclose(m->forward_all({x.squeeze(1)})[0], ref));
  EXPECT_TRUE(torch::allclose(m->forward_all({x.reshape({2, 784})})[0], ref));
}

TEST(Cnn, BatchNormConfig) {
  auto m = make_model(
      "model: {type: cnn, args: {in_channels: 3, image_size: [12, 10], channels: [8, 16], "
      "batch_norm: true, hidden: 20, classes: 5, dropout: 0}}");
  EXPECT_EQ(parameter_count(*m), 3461);  // tests/models/param_counts.py
  auto n = parameter_names(*m);
  EXPECT_EQ(n.front(), "convs.0.weight");
  EXPECT_NE(std::find(n.begin(), n.end(), "norms.1.bias"), n.end());
  EXPECT_EQ(std::find(n.begin(), n.end(), "convs.0.bias"), n.end());  // no conv bias with BN
  EXPECT_EQ(m->named_buffers().size(), 6u);  // running mean / var / count per norm
  EXPECT_EQ(m->forward_all({torch::randn({2, 3, 12, 10})})[0].sizes(),
            (std::vector<int64_t>{2, 5}));
}

TEST(Cnn, WrongImageShapeNamesBothShapes) {
  auto m = make_model("model: {type: cnn}");
  try {
    m->forward_all({torch::randn({2, 3, 28, 28})});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("cnn"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[batch, 1, 28, 28]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 3, 28, 28]"), std::string::npos) << msg;
  }
  EXPECT_THROW(m->forward_all({torch::randn({2, 100})}), ConfigError);
  EXPECT_THROW(m->forward_all({torch::randn({2, 1, 28, 28}), torch::randn({2})}), ConfigError);
}

TEST(Cnn, BadArgsNameTheKey) {
  auto expect_error = [](const std::string& yaml, const std::string& fragment) {
    try {
      make_model(yaml);
      ADD_FAILURE() << "expected ConfigError for " << yaml;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error("model: {type: cnn, args: {image_size: [28]}}", "model.args.image_size");
  expect_error("model: {type: cnn, args: {image_size: [6, 28], channels: [4, 4, 4]}}",
               "model.args.image_size.0 must be >= 8");
  expect_error("model: {type: cnn, args: {channels: []}}", "model.args.channels");
  expect_error("model: {type: cnn, args: {classes: 0}}", "model.args.classes");
}

TEST(Cnn, SgdLowersLoss) {
  torch::set_num_threads(1);
  torch::manual_seed(0);
  auto m = make_model(
      "model: {type: cnn, args: {image_size: [8, 8], channels: [4], hidden: 16, classes: 2, "
      "dropout: 0}}");
  // Class 1 images are bright in the top half, class 0 in the bottom half.
  auto y = torch::arange(16) % 2;
  auto x = torch::randn({16, 1, 8, 8}) * 0.1;
  x.slice(2, 0, 4) += y.view({16, 1, 1, 1}).to(torch::kFloat);
  x.slice(2, 4, 8) += (1 - y).view({16, 1, 1, 1}).to(torch::kFloat);
  auto [before, after] = test::sgd_losses(
      *m, [&] { return torch::cross_entropy_loss(m->forward_all({x})[0], y); }, 20, 0.05);
  EXPECT_LT(after, 0.5 * before);
}

}  // namespace
}  // namespace unitrain
