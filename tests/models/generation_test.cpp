#include "unitrain/models/generation.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "unitrain/checkpoint/hf_folder.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/config.h"
#include "unitrain/core/error.h"
#include "unitrain/models/hf_causal_lm.h"
#include "unitrain/models/transformer_lm.h"

namespace unitrain {
namespace {

/// make_folders.py's folders and generate_reference.py's greedy generations (Debian's PyTorch on
/// the same weights, Hugging Face's equations, no cache), made once for the suite.
class Generation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::temp_dir() + "/generation_folders";
    std::filesystem::remove_all(dir_);
    const std::string hf = "/usr/bin/python3 " + test::source_dir() + "/tests/models/hf/";
    const std::string cmd = hf + "make_folders.py " + dir_ + " > /dev/null && " + hf +
                            "generate_reference.py " + dir_ + " > /dev/null";
    made_ = std::system(cmd.c_str()) == 0;
  }
  void SetUp() override { ASSERT_TRUE(made_) << "make_folders.py or generate_reference.py failed"; }

  static std::shared_ptr<models::HfCausalLm> load(const std::string& folder) {
    register_builtin_models();
    const std::string path = dir_ + "/" + folder;
    const std::string type =
        folder.rfind("gpt2", 0) == 0      ? "gpt2"
        : folder.rfind("mistral", 0) == 0 ? "mistral"
        : folder.rfind("qwen", 0) == 0 || folder.rfind("gemma", 0) == 0 || folder == "phi3"
            ? folder
            : "llama";
    auto m = std::dynamic_pointer_cast<models::HfCausalLm>(model_registry().create(
        Config::from_string("model: {type: " + type + ", args: {pretrained: " + path + "}}")
            .at("model")));
    NamedTensors state;
    for (auto& [name, t] : read_hf_weights(path, "test")) {
      if (auto own = m->hf_info()->model_name(name); !own.empty()) {
        state.emplace_back(own, t.to(torch::kFloat));
      }
    }
    load_module_state(*m, state, true, path);
    m->eval();
    return m;
  }
  static nlohmann::json reference(const std::string& folder) {
    std::ifstream in(dir_ + "/" + folder + "/generate_reference.json");
    return nlohmann::json::parse(in);
  }
  inline static std::string dir_;
  inline static bool made_ = false;
};

TEST_F(Generation, GreedyMatchesPyTorchWithAndWithoutTheCache) {
  for (const char* folder : {"gpt2", "llama", "llama_tied_bias", "qwen2", "qwen3", "mistral",
                             "gemma", "phi3", "gemma2", "gemma3_text"}) {
    auto m = load(folder);
    const nlohmann::json ref = reference(folder);
    for (const auto& c : ref["cases"]) {
      models::GenerationOptions o;
      o.max_new_tokens = c["max_new_tokens"];
      o.repetition_penalty = c["repetition_penalty"];
      for (bool cache : {true, false}) {
        o.use_cache = cache;
        EXPECT_EQ(models::generate(*m, ref["prompt"], o), c["ids"].get<std::vector<int64_t>>())
            << folder << " penalty " << o.repetition_penalty << " cache " << cache;
      }
    }
  }
}

TEST_F(Generation, CachedLogitsEqualTheWholeForward) {
  // (mistral: a sliding window of 5, which the cached tokens move past)
  for (const char* folder :
       {"gpt2", "llama", "qwen3", "mistral", "gemma", "phi3", "gemma2", "gemma3_text"}) {
    auto m = load(folder);
    torch::NoGradGuard no_grad;
    const auto ids = torch::randint(90, {2, 20}, torch::kLong);
    const auto whole = m->forward(ids);
    models::KvCache cache;
    auto first = m->forward_cached(ids.narrow(1, 0, 13), cache);
    std::vector<torch::Tensor> parts{first};
    for (int64_t t = 13; t < 20; ++t)
      parts.push_back(m->forward_cached(ids.narrow(1, t, 1), cache));
    EXPECT_EQ(cache.length, 20);
    EXPECT_TRUE(torch::allclose(torch::cat(parts, 1), whole, 1e-5, 1e-5)) << folder;
  }
}

/// Two examples packed in one row, with segment ids, give each one's logits alone.
void expect_packed_equals_alone(
    const std::function<torch::Tensor(torch::Tensor)>& alone,
    const std::function<torch::Tensor(torch::Tensor, torch::Tensor)>& packed,
    const std::string& what) {
  torch::NoGradGuard no_grad;
  const auto a = torch::randint(90, {1, 7}, torch::kLong),
             b = torch::randint(90, {1, 5}, torch::kLong);
  const auto segments =
      torch::cat({torch::full({1, 7}, 1, torch::kLong), torch::full({1, 5}, 2, torch::kLong)}, 1);
  const auto got = packed(torch::cat({a, b}, 1), segments);
  EXPECT_TRUE(torch::allclose(got.narrow(1, 0, 7), alone(a), 1e-5, 1e-5)) << what;
  EXPECT_TRUE(torch::allclose(got.narrow(1, 7, 5), alone(b), 1e-5, 1e-5)) << what;
  // Without the segments the second example sees the first: different logits.
  EXPECT_FALSE(torch::allclose(alone(torch::cat({a, b}, 1)).narrow(1, 7, 5), alone(b), 1e-3, 1e-3));
}

TEST_F(Generation, PackedRowsKeepAttentionInsideEachExample) {
  for (const char* folder : {"gpt2", "llama", "mistral", "gemma2", "gemma3_text"}) {
    auto m = load(folder);
    expect_packed_equals_alone([&](torch::Tensor x) { return m->forward(x); },
                               [&](torch::Tensor x, torch::Tensor s) { return m->forward(x, s); },
                               folder);
  }
  models::TransformerLm lm(models::TransformerLmOptions(96).d_model(32).heads(4).seq_len(16));
  lm->eval();
  expect_packed_equals_alone([&](torch::Tensor x) { return lm->forward(x); },
                             [&](torch::Tensor x, torch::Tensor s) { return lm->forward(x, s); },
                             "transformer_lm");
}

TEST_F(Generation, BatchedPromptsPaddedOnTheLeftGiveEachItsTokensAlone) {
  for (const char* folder : {"gpt2", "llama", "mistral", "qwen3", "gemma2"}) {
    auto m = load(folder);
    // Three lengths (the longest first, the shortest last), a repeat, greedy and sampled.
    const std::vector<std::vector<int64_t>> prompts{
        {5, 17, 33, 2, 61, 40, 12, 9, 3}, {7}, {5, 17, 33}, {7}, {44, 45, 46, 47, 48}};
    for (const bool sampled : {false, true}) {
      for (const bool cache : {true, false}) {
        models::GenerationOptions o;
        o.max_new_tokens = 10;
        o.use_cache = cache;
        if (sampled) o.temperature = 1.3, o.top_p = 0.9, o.seed = 11;
        o.stop_ids = {m->vocabulary() - 1};
        const auto batch = models::generate_batch(*m, prompts, o);
        ASSERT_EQ(batch.size(), prompts.size());
        for (size_t i = 0; i < prompts.size(); ++i) {
          EXPECT_EQ(batch[i], models::generate(*m, prompts[i], o))
              << folder << " prompt " << i << (sampled ? " sampled" : " greedy")
              << (cache ? "" : " no cache");
        }
      }
    }
    // The padded rows' logits are the unpadded ones' (to float rounding).
    torch::NoGradGuard no_grad;
    models::KvCache cache;
    cache.pads = {0, 6};
    const auto rows =
        torch::tensor({5, 17, 33, 2, 61, 40, 12, 9, 3, 7, 7, 7, 7, 7, 7, 5, 17, 33}).view({2, 9});
    const auto padded = m->forward_cached(rows, cache);
    const auto alone = m->forward(torch::tensor({5, 17, 33}).view({1, 3}));
    EXPECT_TRUE(torch::allclose(padded[1].narrow(0, 6, 3), alone[0], 1e-5, 1e-5)) << folder;
    EXPECT_TRUE(torch::allclose(padded[0], m->forward(rows.narrow(0, 0, 1))[0], 1e-5, 1e-5));
  }
}

TEST_F(Generation, SamplingIsSeededAndTopKOfOneIsGreedy) {
  auto m = load("llama");
  const std::vector<int64_t> prompt{5, 17, 33};
  models::GenerationOptions o;
  o.max_new_tokens = 12;
  const auto greedy = models::generate(*m, prompt, o);
  o.temperature = 1.5;
  o.top_p = 0.9;
  o.seed = 4;
  const auto first = models::generate(*m, prompt, o);
  EXPECT_EQ(models::generate(*m, prompt, o), first);
  o.seed = 5;
  EXPECT_NE(models::generate(*m, prompt, o), first);
  o.top_k = 1;
  EXPECT_EQ(models::generate(*m, prompt, o), greedy);
}

TEST_F(Generation, StopsAtAStopIdAndRefusesTooLongAPrompt) {
  auto m = load("gpt2");
  const nlohmann::json ref = reference("gpt2");
  const auto ids = ref["cases"][0]["ids"].get<std::vector<int64_t>>();
  models::GenerationOptions o;
  o.max_new_tokens = 24;
  o.stop_ids = {ids[3]};
  EXPECT_EQ(models::generate(*m, ref["prompt"], o),
            std::vector<int64_t>(ids.begin(), ids.begin() + 4));
  // min_new_tokens: the stop id is -inf until then, so the greedy path goes on past it.
  o.min_new_tokens = 5;
  const std::vector<int64_t> longer = models::generate(*m, ref["prompt"], o);
  EXPECT_EQ(std::vector<int64_t>(longer.begin(), longer.begin() + 3),
            std::vector<int64_t>(ids.begin(), ids.begin() + 3));
  EXPECT_GE(longer.size(), 5u);
  EXPECT_NE(longer[3], ids[3]);
  for (size_t i = 0; i + 1 < 5 && i < longer.size(); ++i) EXPECT_NE(longer[i], ids[3]) << i;
  o.min_new_tokens = 25;
  EXPECT_TRUE(
      test::contains(test::error_of<ConfigError>([&] { models::generate(*m, ref["prompt"], o); }),
                     "min_new_tokens must be in [0, max_new_tokens = 24]"));
  o.min_new_tokens = 0;
  o.max_new_tokens = 60;  // 7 + 60 > n_positions 64
  EXPECT_TRUE(
      test::contains(test::error_of<ConfigError>([&] { models::generate(*m, ref["prompt"], o); }),
                     "64 positions"));
  o.max_new_tokens = 4;
  o.top_p = 0;
  EXPECT_TRUE(
      test::contains(test::error_of<ConfigError>([&] { models::generate(*m, ref["prompt"], o); }),
                     "top_p must be in (0, 1]"));
}

}  // namespace
}  // namespace unitrain
