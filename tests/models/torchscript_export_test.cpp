#include "unitrain/models/torchscript_export.h"

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/models/cnn.h"
#include "unitrain/models/mlp.h"
#include "unitrain/models/torchscript_model.h"
#include "unitrain/models/transformer_lm.h"

namespace unitrain {
namespace {

/// The built-in models register their exports with their factories.
class TorchScriptExport : public ::testing::Test {
 protected:
  void SetUp() override { register_builtin_models(); }
};

std::set<std::string> names_of(const torch::nn::Module& m) {
  std::set<std::string> names;
  for (const auto& p : m.named_parameters()) names.insert(p.key());
  for (const auto& b : m.named_buffers()) names.insert(b.key());
  return names;
}

std::set<std::string> names_of(const torch::jit::Module& m) {
  std::set<std::string> names;
  for (const auto& p : m.named_parameters()) names.insert(p.name);
  for (const auto& b : m.named_buffers()) names.insert(b.name);
  return names;
}

/// Exports `model` (put in eval mode first) and checks the TorchScript module computes what the
/// model does on `input`, with the same tensor names, also after a save and torch::jit::load.
void expect_same(Model& model, const torch::Tensor& input, double tol = 1e-5) {
  model.eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor expected = model.forward_all({input})[0];
  torch::jit::Module scripted = to_torchscript(model);
  EXPECT_EQ(names_of(scripted), names_of(model));
  EXPECT_FALSE(scripted.is_training());
  const torch::Tensor got = scripted.forward({input}).toTensor();
  ASSERT_EQ(got.sizes(), expected.sizes());
  EXPECT_TRUE(torch::allclose(got, expected, tol, tol)) << (got - expected).abs().max();

  const std::string file = test::temp_dir() + "/model.ts";
  save_torchscript(model, file);
  torch::jit::Module loaded = torch::jit::load(file);
  EXPECT_TRUE(torch::allclose(loaded.forward({input}).toTensor(), expected, tol, tol));
}

TEST_F(TorchScriptExport, MlpEveryActivationFlattenOrNot) {
  for (const auto& name : models::activation_names()) {
    torch::manual_seed(1);
    auto mlp = models::mlp({12, 16, 8, 3}, models::activation_from_name(name), 0.2);
    // Training mode drops units, so the export must be in eval mode to match.
    expect_same(*mlp, torch::randn({5, 3, 4}));
  }
  auto last_dim = models::mlp({6, 4}, models::Activation::ReLU, 0.0, /*flatten=*/false);
  expect_same(*last_dim, torch::randn({2, 5, 6}));
  auto ints = models::mlp({4, 3});
  expect_same(*ints, torch::randint(0, 5, {3, 4}));  // integer inputs become float
}

TEST_F(TorchScriptExport, CnnWithAndWithoutBatchNorm) {
  for (bool bn : {false, true}) {
    torch::manual_seed(2);
    models::Cnn cnn(models::CnnOptions()
                        .in_channels(1)
                        .image_size({12, 12})
                        .channels({4, 6})
                        .batch_norm(bn)
                        .hidden(16)
                        .classes(5));
    if (bn) {  // running statistics away from their defaults
      cnn->train();
      torch::NoGradGuard no_grad;
      for (int i = 0; i < 3; ++i) cnn->forward(torch::randn({8, 1, 12, 12}) * 3 + 1);
    }
    expect_same(*cnn, torch::randn({3, 1, 12, 12}));
    expect_same(*cnn, torch::randn({3, 144}));     // flat images
    expect_same(*cnn, torch::randn({3, 12, 12}));  // no channel dim
    const auto names = names_of(to_torchscript(*cnn));
    EXPECT_EQ(names.count("convs.0.bias"), bn ? 0u : 1u);  // batch norm drops the conv biases
    EXPECT_EQ(names.count("norms.1.running_var"), bn ? 1u : 0u);
  }
}

TEST_F(TorchScriptExport, TransformerLm) {
  torch::manual_seed(3);
  models::TransformerLm lm(
      models::TransformerLmOptions(11).d_model(16).layers(2).heads(4).seq_len(9));
  expect_same(*lm, torch::randint(0, 11, {2, 9}), 1e-4);
  expect_same(*lm, torch::randint(0, 11, {3, 4}), 1e-4);  // shorter than seq_len
  EXPECT_TRUE(names_of(to_torchscript(*lm)).count("blocks.1.attention.qkv.weight"));
}

TEST_F(TorchScriptExport, ExportCopiesTheWeights) {
  auto mlp = models::mlp({3, 2});
  torch::jit::Module scripted = to_torchscript(*mlp);
  {
    torch::NoGradGuard no_grad;
    mlp->layers[0]->as<torch::nn::Linear>()->weight.fill_(7);
  }
  EXPECT_FALSE(torch::equal(
      scripted.attr("layers").toModule().attr("0").toModule().attr("weight").toTensor(),
      torch::full({2, 3}, 7.0)));
}

TEST_F(TorchScriptExport, TorchScriptModelRoundTrip) {
  torch::manual_seed(4);
  auto mlp = models::mlp({5, 4, 2}, models::Activation::GELU);
  const std::string file = test::temp_dir() + "/mlp.ts";
  save_torchscript(*mlp, file);
  models::TorchScriptModel wrapped(file);
  {  // stands for training: the export must carry the wrapper's current weights
    torch::NoGradGuard no_grad;
    wrapped.named_parameters()["layers.0.weight"].add_(0.5);
  }
  expect_same(wrapped, torch::randn({3, 5}));
  torch::jit::Module again = to_torchscript(wrapped);
  EXPECT_TRUE(
      torch::equal(again.attr("layers").toModule().attr("0").toModule().attr("weight").toTensor(),
                   wrapped.named_parameters()["layers.0.weight"]));
}

TEST_F(TorchScriptExport, PythonRunsTheFile) {
  ASSERT_EQ(std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1"), 0)
      << "/usr/bin/python3 has no torch: scripts/test installs python3-torch";
  torch::manual_seed(5);
  models::TransformerLm lm(
      models::TransformerLmOptions(7).d_model(8).layers(1).heads(2).seq_len(6));
  const std::string dir = test::temp_dir();
  save_torchscript(*lm, dir + "/lm.ts");
  const std::string cmd = "/usr/bin/python3 " + test::source_dir() +
                          "/tests/models/torchscript_export_check.py " + dir +
                          "/lm.ts 2 6 --dtype long > " + dir + "/out.json";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(dir + "/out.json");
  const auto out = nlohmann::json::parse(in);
  EXPECT_EQ(out["output_shape"], nlohmann::json({2, 6, 7}));
  EXPECT_EQ(out["training"], false);
  std::set<std::string> keys;
  for (const auto& k : out["state_dict"]) keys.insert(k.get<std::string>());
  EXPECT_EQ(keys, names_of(*lm));
}

struct Custom : Model {
  std::vector<torch::Tensor> forward_all(const std::vector<torch::Tensor>& in) override {
    return in;
  }
};

TEST_F(TorchScriptExport, OtherModelsAreAConfigError) {
  Custom custom;
  EXPECT_FALSE(can_export_torchscript(custom));
  EXPECT_TRUE(can_export_torchscript(*models::mlp({2, 2})));
  try {
    to_torchscript(custom);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("state_dict"), std::string::npos) << e.what();
  }
}

/// A model class of this test's own: it becomes exportable by registering its export.
struct DoubledLinear : Model {
  DoubledLinear() { fc = register_module("fc", torch::nn::Linear(3, 2)); }
  std::vector<torch::Tensor> forward_all(const std::vector<torch::Tensor>& in) override {
    return {fc->forward(in[0]) * 2};
  }
  torch::nn::Linear fc{nullptr};
};

torch::jit::Module export_doubled_linear(const DoubledLinear& m) {
  torch::jit::Module j = torchscript::mirror(m, "doubled_linear");  // fc's forward comes along
  j.define("def forward(self, x):\n    return self.fc.forward(x) * 2\n");
  return j;
}

TEST_F(TorchScriptExport, AModelClassRegistersItsOwnExport) {
  static const bool registered = [] {
    register_torchscript_export<DoubledLinear>("doubled_linear", export_doubled_linear);
    return true;
  }();
  ASSERT_TRUE(registered);
  DoubledLinear model;
  EXPECT_TRUE(can_export_torchscript(model));
  expect_same(model, torch::randn({4, 3}));
  EXPECT_THROW(register_torchscript_export<DoubledLinear>("doubled_linear", export_doubled_linear),
               ConfigError);
}

TEST_F(TorchScriptExport, UnwritablePathIsATrainErrorNamingIt) {
  auto mlp = models::mlp({2, 2});
  EXPECT_THROW(save_torchscript(*mlp, "/nonexistent-dir/x.ts"), TrainError);
}

}  // namespace
}  // namespace unitrain
