#include "unitrain/models/torchscript_model.h"

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <cstdlib>
#include <fstream>

#include "models/sgd_check.h"
#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/models/model.h"

namespace unitrain {
namespace {

/// Runs tests/models/make_torchscript_fixtures.py once (it also runs
/// examples/torchscript/make_model.py's export) to write the modules into a temp folder.
class TorchScriptModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(test::temp_dir());
    std::string cmd = "/usr/bin/python3 " + test::source_dir() +
                      "/tests/models/make_torchscript_fixtures.py " + *dir_ + " > /dev/null";
    made_ = std::system(cmd.c_str()) == 0;
    has_torch_ = made_ || std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") == 0;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(has_torch_) << "/usr/bin/python3 has no torch: scripts/test installs python3-torch";
    ASSERT_TRUE(made_) << "the Python scripts failed";
    register_builtin_models();
  }
  static std::string file(const std::string& name) { return *dir_ + "/" + name; }
  static ModelPtr make(const std::string& name) {
    return model_registry().create(
        Config::from_string("model: {type: torchscript, args: {path: '" + file(name) + "'}}")
            .at("model"));
  }

  static std::string* dir_;
  static bool made_;
  static bool has_torch_;
};
std::string* TorchScriptModelTest::dir_ = nullptr;
bool TorchScriptModelTest::made_ = false;
bool TorchScriptModelTest::has_torch_ = false;

std::vector<std::string> names(const torch::nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& p : m.named_parameters()) out.push_back(p.key());
  return out;
}

TEST_F(TorchScriptModelTest, DigitsMlpParametersForwardAndTraining) {
  auto m = make("digits_mlp.pt");
  auto* ts = dynamic_cast<models::TorchScriptModel*>(m.get());
  ASSERT_NE(ts, nullptr);
  EXPECT_EQ(names(*m),
            (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(m->named_parameters()["fc1.weight"].sizes(), (std::vector<int64_t>{32, 64}));

  // Same output as Python on the saved input.
  auto check = torch::jit::load(file("digits_check.pt"));
  auto x = check.attr("x").toTensor(), expected = check.attr("y").toTensor();
  m->eval();
  auto out = m->forward_all({x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(torch::allclose(out[0], expected, 1e-5, 1e-6));
  EXPECT_TRUE(m->prediction_names().empty());

  // One SGD step over the wrapper's parameters changes the scripted module's own weights.
  m->train();
  auto jit_weight = [&] {
    return ts->jit_module().attr("fc1").toModule().attr("weight").toTensor();
  };
  auto before = jit_weight().clone();
  torch::optim::SGD sgd(m->parameters(), 0.1);
  auto loss = torch::cross_entropy_loss(m->forward_all({x})[0], torch::arange(5) % 10);
  loss.backward();
  sgd.step();
  EXPECT_FALSE(torch::allclose(jit_weight(), before));
  EXPECT_TRUE(torch::equal(jit_weight(), m->named_parameters()["fc1.weight"]));
  EXPECT_FALSE(torch::allclose(m->forward_all({x})[0], expected));
}

TEST_F(TorchScriptModelTest, SgdLowersLoss) {
  torch::manual_seed(0);
  auto m = make("digits_mlp.pt");
  auto x = torch::randn({20, 64});
  auto y = torch::arange(20) % 10;
  auto [before, after] = test::sgd_losses(
      *m, [&] { return torch::cross_entropy_loss(m->forward_all({x})[0], y); }, 20, 0.1);
  EXPECT_LT(after, 0.5 * before);
}

TEST_F(TorchScriptModelTest, DictOutputNestedModulesBuffersAndTrainMode) {
  auto m = make("dict_net.pt");
  auto* ts = dynamic_cast<models::TorchScriptModel*>(m.get());
  ASSERT_NE(ts, nullptr);
  std::vector<std::string> expected_names;
  std::ifstream in(file("dict_net.names.txt"));
  for (std::string line; std::getline(in, line);) expected_names.push_back(line);
  ASSERT_EQ(expected_names.size(), 7u);
  EXPECT_EQ(names(*m), expected_names);
  auto buffers = m->named_buffers();
  EXPECT_TRUE(buffers.contains("encoder.layers.1.running_mean"));
  EXPECT_TRUE(buffers.contains("encoder.layers.1.num_batches_tracked"));

  auto x = torch::randn({6, 4});
  auto out = m->forward_all({x});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(m->prediction_names(), (std::vector<std::string>{"logits", "embedding"}));
  EXPECT_EQ(out[0].sizes(), (std::vector<int64_t>{6, 3}));
  EXPECT_EQ(out[1].sizes(), (std::vector<int64_t>{6, 8}));

  // train(): dropout active and batch statistics updated; eval(): deterministic.
  EXPECT_TRUE(ts->jit_module().is_training());
  auto mean_before = buffers["encoder.layers.1.running_mean"].clone();
  m->forward_all({x});
  EXPECT_FALSE(torch::equal(buffers["encoder.layers.1.running_mean"], mean_before));
  m->eval();
  EXPECT_FALSE(ts->jit_module().is_training());
  EXPECT_FALSE(ts->jit_module().attr("drop").toModule().is_training());
  EXPECT_TRUE(torch::equal(m->forward_all({x})[0], m->forward_all({x})[0]));
  m->train();
  EXPECT_TRUE(ts->jit_module().attr("drop").toModule().is_training());
}

TEST_F(TorchScriptModelTest, TupleOutputAndOptionalInput) {
  auto m = make("tuple_net.pt");
  auto x = torch::randn({3, 4});
  auto out = m->forward_all({x});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(torch::allclose(out[1], out[0].sum(1)));
  auto shifted = m->forward_all({x, torch::ones({3, 2})});
  EXPECT_TRUE(torch::allclose(shifted[0], out[0] + 1));
  EXPECT_TRUE(m->prediction_names().empty());
  try {
    m->forward_all({x, x, x});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("takes 1 to 2 input tensor(s), got 3"), std::string::npos)
        << e.what();
  }
}

TEST_F(TorchScriptModelTest, TracedModule) {
  auto m = make("traced_net.pt");
  EXPECT_EQ(names(*m), (std::vector<std::string>{"0.weight", "0.bias"}));
  auto check = torch::jit::load(file("traced_check.pt"));
  m->eval();
  EXPECT_TRUE(torch::allclose(m->forward_all({check.attr("x").toTensor()})[0],
                              check.attr("y").toTensor(), 1e-5, 1e-6));
  // to() converts the scripted module's own tensors (they are the same tensors).
  m->to(torch::kDouble);
  auto out = m->forward_all({check.attr("x").toTensor().to(torch::kDouble)})[0];
  EXPECT_EQ(out.scalar_type(), torch::kDouble);
}

TEST_F(TorchScriptModelTest, WrongInputShapeNamesFileAndShape) {
  auto m = make("digits_mlp.pt");
  try {
    m->forward_all({torch::randn({8, 63})});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("digits_mlp.pt"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[8, 63]"), std::string::npos) << msg;
    EXPECT_NE(msg.find(": RuntimeError: mat1 and mat2 shapes cannot be multiplied"),
              std::string::npos)
        << msg;
  }
  EXPECT_THROW(m->forward_all({}), ConfigError);
}

TEST_F(TorchScriptModelTest, MissingOrBrokenFile) {
  try {
    make("no_such_model.pt");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("model.args.path"), std::string::npos) << msg;
    EXPECT_NE(msg.find("no_such_model.pt"), std::string::npos) << msg;
  }
  test::write_file(file("broken.pt"), "not a zip archive");
  try {
    make("broken.pt");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("broken.pt"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      model_registry().create(Config::from_string("model: {type: torchscript}").at("model")),
      ConfigError);
}

}  // namespace
}  // namespace unitrain
