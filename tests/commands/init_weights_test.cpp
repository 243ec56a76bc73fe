// load_init_weights on its own (no Trainer): a fine-tune's start from a state_dict file, a
// safetensors file of another float precision, names renamed by model.init_key_map, and the
// errors that name model.init_from.
#include "unitrain/commands/init_weights.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>

#include "test_util.h"
#include "unitrain/checkpoint/safetensors.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/models/model.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {
namespace {

struct TwoByOne : Model {
  torch::nn::Linear fc{nullptr};
  TwoByOne() { fc = register_module("fc", torch::nn::Linear(2, 1)); }
  std::vector<torch::Tensor> forward_all(const std::vector<torch::Tensor>& in) override {
    return {fc->forward(in[0])};
  }
};

ObjectiveModule fresh_module() {
  register_builtins();  // the loss
  return ObjectiveModule(std::make_shared<TwoByOne>(),
                         Config(Config::from_string("losses: [{type: mse}]").node(), "objective"));
}

/// The module's own names, each tensor filled with `value` (as `dtype`), names prefixed.
NamedTensors state_of(ObjectiveModule& module, float value, torch::Dtype dtype = torch::kFloat32,
                      const std::string& prefix = "") {
  NamedTensors out;
  for (const auto& [name, t] : module_state(module.weights(), true)) {
    out.emplace_back(prefix + name, torch::full_like(t, value).to(dtype));
  }
  return out;
}

ModelSection from(const std::string& path, NamedStrings key_map = {}) {
  ModelSection m;
  m.init_from = path;
  m.init_key_map = std::move(key_map);
  return m;
}

void expect_all(ObjectiveModule& module, float value) {
  for (const auto& p : module.weights().parameters()) {
    EXPECT_TRUE(torch::equal(p.detach(), torch::full_like(p, value))) << p;
  }
}

TEST(InitWeights, AStateDictFileIsLoaded) {
  ObjectiveModule module = fresh_module();
  const std::string path = test::temp_dir() + "/start.pt";
  const std::vector<char> bytes = save_tensor_dict(state_of(module, 1.5));
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  load_init_weights(module, from(path));
  expect_all(module, 1.5);
}

TEST(InitWeights, ASafetensorsFileOfBfloat16IsConvertedAndRenamed) {
  ObjectiveModule module = fresh_module();
  const std::string path = test::temp_dir() + "/start.safetensors";
  write_safetensors(path, state_of(module, 0.75, torch::kBFloat16, "backbone."));
  load_init_weights(module, from(path, {{"backbone.", ""}}));
  expect_all(module, 0.75);  // exact in bfloat16
}

TEST(InitWeights, ErrorsNameModelInitFrom) {
  ObjectiveModule module = fresh_module();
  const std::string dir = test::temp_dir();
  std::string m = test::message_of([&] { load_init_weights(module, from(dir + "/none.pt")); });
  EXPECT_TRUE(test::contains(m, "model.init_from")) << m;
  EXPECT_TRUE(test::contains(m, "none.pt")) << m;
  // Names the model does not have, strict: refused, with the renaming that would fit.
  write_safetensors(dir + "/other.safetensors", state_of(module, 1, torch::kFloat32, "net."));
  m = test::message_of([&] { load_init_weights(module, from(dir + "/other.safetensors")); });
  EXPECT_TRUE(test::contains(m, "model.init_from")) << m;
  EXPECT_TRUE(test::contains(m, "model.init_key_map")) << m;
  // A rename of the user's own that misses: the hint is the map from the file's names, not one
  // that undoes theirs ({"": "net."} after a wrong {"net.": "x."}).
  m = test::message_of([&] {
    load_init_weights(module, from(dir + "/other.safetensors", {{"net.", "x."}}));
  });
  EXPECT_TRUE(test::contains(m, "set model.init_key_map: {\"net.\": \"\"}")) << m;
  EXPECT_TRUE(test::contains(m, "in place of the map given")) << m;
  test::write_file(dir + "/junk.pt", "not a tensor file");
  EXPECT_THROW(load_init_weights(module, from(dir + "/junk.pt")), ConfigError);
}

}  // namespace
}  // namespace unitrain
