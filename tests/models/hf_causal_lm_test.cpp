#include "unitrain/models/hf_causal_lm.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "test_util.h"
#include "unitrain/checkpoint/hf_folder.h"
#include "unitrain/checkpoint/safetensors.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/config.h"
#include "unitrain/core/error.h"
#include "unitrain/models/model.h"

namespace unitrain {
namespace {

/// The folders tests/models/hf/make_folders.py writes and the references of
/// tests/models/hf/reference.py (a forward written from Hugging Face's modeling equations in
/// Debian's PyTorch), made once for the suite.
class HfCausalLm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::temp_dir() + "/hf_folders";
    std::filesystem::remove_all(dir_);
    const std::string hf = "/usr/bin/python3 " + test::source_dir() + "/tests/models/hf/";
    const std::string cmd = hf + "make_folders.py " + dir_ + " > /dev/null && " + hf +
                            "reference.py " + dir_ + " > /dev/null";
    made_ = std::system(cmd.c_str()) == 0;
  }
  void SetUp() override {
    ASSERT_TRUE(made_)
        << "tests/models/hf/make_folders.py or reference.py failed (scripts/test installs "
           "python3-torch)";
  }

  /// `type` from `folder`'s config and weights, as model.args.pretrained builds and loads it.
  static ModelPtr load(const std::string& type, const std::string& folder) {
    register_builtin_models();
    const std::string path = dir_ + "/" + folder;
    ModelPtr m = model_registry().create(
        Config::from_string("model: {type: " + type + ", args: {pretrained: " + path + "}}")
            .at("model"));
    const HfModelInfo* hf = m->hf_info();
    EXPECT_NE(hf, nullptr);
    NamedTensors state;
    for (auto& [name, t] : read_hf_weights(path, "test")) {
      const std::string own = hf->model_name(name);
      if (!own.empty()) state.emplace_back(own, t.to(torch::kFloat));
    }
    load_module_state(*m, state, true, path);
    return m;
  }

  /// Logits, loss and every gradient of `folder`'s model against its reference (fp32, 1e-5).
  static void check_against_reference(const std::string& type, const std::string& folder) {
    ModelPtr m = load(type, folder);
    m->eval();  // the reference runs without dropout
    const auto ref =
        read_safetensors(dir_ + "/" + folder + "/reference.safetensors", "test").tensors;
    std::map<std::string, torch::Tensor> r(ref.begin(), ref.end());
    const torch::Tensor ids = r.at("ids");
    const torch::Tensor logits = m->forward_all({ids})[0];
    EXPECT_TRUE(torch::allclose(logits, r.at("logits"), 1e-5, 1e-5))
        << folder << ": logits differ by " << (logits - r.at("logits")).abs().max().item<double>();
    const int64_t v = logits.size(-1);
    const torch::Tensor loss =
        torch::nn::functional::cross_entropy(logits.narrow(1, 0, ids.size(1) - 1).reshape({-1, v}),
                                             ids.narrow(1, 1, ids.size(1) - 1).reshape({-1}));
    EXPECT_NEAR(loss.item<double>(), r.at("loss").item<double>(), 1e-5) << folder;
    loss.backward();
    auto params = m->named_parameters();
    const HfModelInfo* hf = m->hf_info();
    int64_t compared = 0;
    for (const auto& [name, grad] : ref) {
      if (name.rfind("grad.", 0) != 0) continue;
      const std::string own = hf->model_name(name.substr(5));
      ASSERT_TRUE(params.contains(own)) << folder << ": " << name << " -> " << own;
      const torch::Tensor g = params[own].grad();
      ASSERT_TRUE(g.defined()) << own;
      EXPECT_TRUE(torch::allclose(g, grad, 1e-5, 1e-5))
          << folder << ": the gradient of " << own << " differs by "
          << (g - grad).abs().max().item<double>();
      ++compared;
    }
    EXPECT_EQ(compared, int64_t(params.size())) << folder << ": every parameter's gradient";
  }

  static std::string dir_;
  static bool made_;
};
std::string HfCausalLm::dir_;
bool HfCausalLm::made_ = false;

TEST_F(HfCausalLm, Gpt2MatchesTheEquations) { check_against_reference("gpt2", "gpt2"); }

TEST_F(HfCausalLm, Gpt2HubNamesAndMaskBuffersLoad) {
  check_against_reference("gpt2", "gpt2_noprefix");
}

TEST_F(HfCausalLm, LlamaWithGroupedQueryHeadDimAndLlama3RopeMatches) {
  check_against_reference("llama", "llama");
}

TEST_F(HfCausalLm, LlamaShardedFolderLoads) { check_against_reference("llama", "llama_sharded"); }

TEST_F(HfCausalLm, LlamaTiedWithBiasesFromBf16Matches) {
  check_against_reference("llama", "llama_tied_bias");
}

TEST_F(HfCausalLm, Qwen2WithQkvBiasesAndATiedHeadMatches) {
  check_against_reference("qwen2", "qwen2");
}

TEST_F(HfCausalLm, Qwen3WithQkNormsAndAWiderHeadDimMatches) {
  check_against_reference("qwen3", "qwen3");
}

TEST_F(HfCausalLm, MistralWithASlidingWindowShorterThanTheSequenceMatches) {
  check_against_reference("mistral", "mistral");
}

TEST_F(HfCausalLm, GemmaWithGeGluScaledEmbeddingsAndOnePlusWNormsMatches) {
  check_against_reference("gemma", "gemma");
}

TEST_F(HfCausalLm, Phi3WithFusedProjectionsAndASlidingWindowMatches) {
  check_against_reference("phi3", "phi3");
}

TEST_F(HfCausalLm, Gemma2WithSoftCapsSandwichNormsAndAlternatingWindowsMatches) {
  check_against_reference("gemma2", "gemma2");
}

TEST_F(HfCausalLm, Gemma3TextWithQkNormsAndLocalRopeOnItsSlidingLayersMatches) {
  check_against_reference("gemma3_text", "gemma3_text");
}

TEST_F(HfCausalLm, ParameterNamesAreHuggingFacesAndUnitsCoverEachOnce) {
  for (const auto& [type, folder] :
       std::vector<std::pair<std::string, std::string>>{{"gpt2", "gpt2"},
                                                        {"llama", "llama"},
                                                        {"llama", "llama_tied_bias"},
                                                        {"qwen2", "qwen2"},
                                                        {"qwen3", "qwen3"},
                                                        {"mistral", "mistral"},
                                                        {"gemma", "gemma"},
                                                        {"phi3", "phi3"},
                                                        {"gemma2", "gemma2"},
                                                        {"gemma3_text", "gemma3_text"}}) {
    ModelPtr m = load(type, folder);
    std::set<std::string> file_names;
    for (const auto& [name, t] : read_hf_weights(dir_ + "/" + folder, "test")) {
      if (!m->hf_info()->model_name(name).empty()) file_names.insert(name);
    }
    std::set<std::string> own;
    for (const auto& p : m->named_parameters()) own.insert(p.key());
    EXPECT_EQ(own, file_names) << folder;
    EXPECT_TRUE(m->named_buffers().is_empty()) << folder << ": no buffer beside the weights";
    std::set<const void*> seen;
    size_t listed = 0;
    for (const auto& unit : m->units()) {
      for (const auto& p : unit) {
        seen.insert(p.unsafeGetTensorImpl());
        ++listed;
      }
    }
    EXPECT_EQ(listed, own.size()) << folder;
    EXPECT_EQ(seen.size(), own.size()) << folder;
  }
}

TEST_F(HfCausalLm, FreshModelOfAConfigTrainsAndKeepsGpt2sInit) {
  register_builtin_models();
  ModelPtr m = model_registry().create(
      Config::from_string("model: {type: gpt2, args: {config: " + dir_ + "/gpt2/config.json}}")
          .at("model"));
  auto params = m->named_parameters();
  // GPT-2's init: output projections N(0, 0.02 / sqrt(2 n_layer)), LayerNorms one and zero.
  EXPECT_LT(params["transformer.h.0.attn.c_proj.weight"].std().item<double>(), 0.013);
  EXPECT_TRUE(torch::equal(params["transformer.h.1.ln_2.weight"], torch::ones({32})));
  EXPECT_TRUE(torch::equal(params["transformer.h.1.mlp.c_fc.bias"], torch::zeros({128})));
  auto out = m->forward_all({torch::randint(96, {2, 64})})[0];
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{2, 64, 96}));
}

TEST_F(HfCausalLm, ItsContextLengthIsItsConfigsPositionsAndItGenerates) {
  register_builtin_models();
  for (const std::string type : {"gpt2", "llama"}) {
    const std::string config = dir_ + "/" + type + "/config.json";
    ModelPtr m = model_registry().create(
        Config::from_string("model: {type: " + type + ", args: {config: " + config + "}}")
            .at("model"));
    const nlohmann::json c = nlohmann::json::parse(std::ifstream(config));
    const int64_t positions = c.at(type == "gpt2" ? "n_positions" : "max_position_embeddings");
    EXPECT_EQ(m->context_length(), std::optional<int64_t>(positions)) << type;
    EXPECT_EQ(static_cast<Model*>(m->generation_model()), m.get()) << type;
    EXPECT_EQ(m->vocab_size(), std::optional<int64_t>(c.at("vocab_size").get<int64_t>())) << type;
  }
}

TEST_F(HfCausalLm, MathItDoesNotComputeIsRefusedByName) {
  register_builtin_models();
  auto refused = [](const std::string& type, const std::string& json) {
    const std::string path = test::write_file(test::temp_dir() + "/hf_bad_config.json", json);
    return test::config_error_of([&] {
      model_registry().create(
          Config::from_string("model: {type: " + type + ", args: {config: " + path + "}}")
              .at("model"));
    });
  };
  const std::string gpt2 = R"({"model_type": "gpt2", "n_embd": 32, "n_head": 4, "n_layer": 1, )";
  EXPECT_TRUE(test::contains(refused("gpt2", gpt2 + R"("scale_attn_by_inverse_layer_idx": true})"),
                             "scale_attn_by_inverse_layer_idx"));
  EXPECT_TRUE(test::contains(refused("gpt2", gpt2 + R"("activation_function": "quick_gelu"})"),
                             "activation_function"));
  const std::string llama =
      R"({"model_type": "llama", "hidden_size": 32, "num_attention_heads": 4, )";
  const std::string yarn =
      refused("llama", llama + R"("rope_scaling": {"rope_type": "yarn", "factor": 4}})");
  EXPECT_TRUE(test::contains(yarn, "rope_scaling") && test::contains(yarn, "yarn")) << yarn;
  EXPECT_TRUE(
      test::contains(refused("llama", llama + R"("sliding_window": 4096})"), "sliding_window"));
  EXPECT_TRUE(test::contains(refused("llama", llama + R"("num_key_value_heads": 3})"),
                             "num_key_value_heads"));
  const std::string wrong = refused("llama", gpt2 + "\"n_inner\": null}");
  EXPECT_TRUE(test::contains(wrong, "model_type 'gpt2'") &&
              test::contains(wrong, "model.type gpt2"))
      << wrong;
  EXPECT_TRUE(test::contains(refused("gpt2", "{not json"), "is not JSON"));
  // Qwen: full attention in every layer (the hub's files); a sliding window is refused.
  const std::string qwen2 =
      R"({"model_type": "qwen2", "hidden_size": 32, "num_attention_heads": 4, )";
  EXPECT_TRUE(test::contains(refused("qwen2", qwen2 + R"("use_sliding_window": true})"),
                             "use_sliding_window is true: qwen2 computes full attention"));
  EXPECT_TRUE(test::contains(
      refused("qwen2", qwen2 + R"("layer_types": ["full_attention", "sliding_attention"]})"),
      "layer_types holds \"sliding_attention\""));
  const std::string as_llama = refused("llama", qwen2 + R"("use_sliding_window": false})");
  EXPECT_TRUE(test::contains(as_llama, "use model.type qwen2 for it")) << as_llama;
  EXPECT_TRUE(test::contains(refused("qwen3", qwen2 + "\"vocab_size\": 8}"),
                             "model_type 'qwen2', not 'qwen3'"));
  // Gemma 2's soft caps are its own: a llama file with one is refused; its layer kinds checked.
  EXPECT_TRUE(test::contains(refused("llama", llama + R"("attn_logit_softcapping": 50.0})"),
                             "attn_logit_softcapping is 50.0: llama does not compute it"));
  const std::string gemma2 =
      R"({"model_type": "gemma2", "hidden_size": 32, "num_attention_heads": 4, "head_dim": 8, )"
      R"("num_hidden_layers": 2, "num_key_value_heads": 1, )";
  EXPECT_TRUE(test::contains(
      refused("gemma2", gemma2 + R"("layer_types": ["full_attention", "chunked_attention"]})"),
      "layer_types[1] is \"chunked_attention\""));
  EXPECT_TRUE(test::contains(refused("gemma2", gemma2 + R"("layer_types": ["full_attention"]})"),
                             "must be a list of num_hidden_layers (2) entries"));
  EXPECT_TRUE(test::contains(refused("gemma2", gemma2 + R"("attn_logit_softcapping": -1})"),
                             "attn_logit_softcapping"));
  const std::string both = test::config_error_of([&] {
    model_registry().create(
        Config::from_string("model: {type: llama, args: {pretrained: a, config: b}}").at("model"));
  });
  EXPECT_TRUE(test::contains(both, "keep one")) << both;
}

TEST_F(HfCausalLm, ExportedWeightsShardPastTheLimitWithAnIndex) {
  const std::string out = test::temp_dir() + "/hf_shards";
  std::filesystem::remove_all(out);
  std::filesystem::create_directories(out);
  const NamedTensors weights = read_hf_weights(dir_ + "/llama", "test");
  const auto files = write_hf_weights(out, weights, 40000);
  ASSERT_GT(files.size(), 2u);
  EXPECT_EQ(files.back(), "model.safetensors.index.json");
  const NamedTensors again = read_hf_weights(out, "test");
  ASSERT_EQ(again.size(), weights.size());
  std::map<std::string, torch::Tensor> back(again.begin(), again.end());
  for (const auto& [name, t] : weights) EXPECT_TRUE(torch::equal(back.at(name), t)) << name;
  // A shard the index names that is gone is named.
  std::filesystem::remove(out + "/" + files.front());
  EXPECT_TRUE(test::contains(test::config_error_of([&] { read_hf_weights(out, "k"); }),
                             files.front() + "' is missing"));
}

/// A copy of `folder` (of dir_) whose config.json (or `file`) `change` edited, under `name`.
std::string edited_folder(const std::string& from, const std::string& name,
                          const std::function<void(nlohmann::json&)>& change,
                          const std::string& file = "config.json") {
  const std::string to = test::temp_dir() + "/" + name;
  std::filesystem::remove_all(to);
  std::filesystem::copy(from, to);
  std::ifstream in(to + "/" + file);
  nlohmann::json j = nlohmann::json::parse(in);
  change(j);
  test::write_file(to + "/" + file, j.dump());
  return to;
}

/// The error of building `type` from folder `path` (model.args.pretrained).
std::string pretrained_error(const std::string& type, const std::string& path) {
  register_builtin_models();
  return test::config_error_of([&] {
    model_registry().create(
        Config::from_string("model: {type: " + type + ", args: {pretrained: " + path + "}}")
            .at("model"));
  });
}

TEST_F(HfCausalLm, ShapeOfAConfigIsTheModelsParameters) {
  register_builtin_models();
  const std::string gpt2 = edited_folder(dir_ + "/gpt2", "shape_gpt2", [](nlohmann::json& j) {
    j["n_inner"] = 40;
    j["tie_word_embeddings"] = false;
  });
  for (const auto& [type, config] : std::vector<std::pair<std::string, std::string>>{
           {"gpt2", dir_ + "/gpt2/config.json"},
           {"gpt2", gpt2 + "/config.json"},
           {"llama", dir_ + "/llama/config.json"},
           {"llama", dir_ + "/llama_tied_bias/config.json"},
           {"qwen2", dir_ + "/qwen2/config.json"},
           {"qwen3", dir_ + "/qwen3/config.json"},
           {"mistral", dir_ + "/mistral/config.json"},
           {"gemma", dir_ + "/gemma/config.json"},
           {"phi3", dir_ + "/phi3/config.json"},
           {"gemma2", dir_ + "/gemma2/config.json"},
           {"gemma3_text", dir_ + "/gemma3_text/config.json"}}) {
    ModelPtr m = model_registry().create(
        Config::from_string("model: {type: " + type + ", args: {config: " + config + "}}")
            .at("model"));
    std::map<std::string, std::vector<int64_t>> built, said;
    for (const auto& p : m->named_parameters()) built[p.key()] = p.value().sizes().vec();
    const models::ConfigShape shape =
        type == "gpt2" ? models::Gpt2Impl::shape_of(m->as<models::Gpt2Impl>()->config, config)
                       : models::LlamaImpl::shape_of(m->as<models::LlamaImpl>()->config, config);
    for (const auto& t : shape.tensors) said[t.name] = t.shape;
    EXPECT_EQ(said, built) << config;
  }
}

TEST_F(HfCausalLm, AConfigThatIsNotItsWeightsIsRefusedBeforeBuildingNamingKeyAndTensor) {
  // Three layers over two of weights: the files' layers, named (it used to name neither file).
  const std::string three = pretrained_error(
      "gpt2", edited_folder(dir_ + "/gpt2", "three", [](nlohmann::json& j) { j["n_layer"] = 3; }));
  EXPECT_TRUE(test::contains(three,
                             "config.json says n_layer 3, but model.safetensors has "
                             "layers 0..1"))
      << three;
  const std::string one = pretrained_error(
      "llama", edited_folder(dir_ + "/llama_sharded", "one",
                             [](nlohmann::json& j) { j["num_hidden_layers"] = 1; }));
  EXPECT_TRUE(test::contains(one,
                             "config.json says num_hidden_layers 1, but "
                             "model.safetensors.index.json has layers 0..1"))
      << one;
  const std::string wide = pretrained_error(
      "gpt2",
      edited_folder(dir_ + "/gpt2", "wide", [](nlohmann::json& j) { j["n_positions"] = 65; }));
  EXPECT_TRUE(test::contains(wide,
                             "config.json (n_positions 65, n_embd 32) makes "
                             "transformer.wpe.weight [65, 32], but model.safetensors holds "
                             "transformer.wpe.weight [64, 32]"))
      << wide;
  const std::string untied = pretrained_error(
      "llama", edited_folder(dir_ + "/llama_tied_bias", "untied",
                             [](nlohmann::json& j) { j["tie_word_embeddings"] = false; }));
  EXPECT_TRUE(test::contains(untied, "model.safetensors has no lm_head.weight")) << untied;
  // Sizes no model has: refused by their key before anything of their size is made (1e18
  // layers hung building blocks; 2^62 threw std::bad_alloc; 2^40 positions LibTorch's text).
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, int64_t>>{{"n_layer", int64_t(1000000000000000000)},
                                                    {"n_layer", int64_t(1) << 62},
                                                    {"n_positions", int64_t(1) << 40}}) {
    const std::string huge = pretrained_error(
        "gpt2",
        edited_folder(dir_ + "/gpt2", "huge",
                      [&, key = key, value = value](nlohmann::json& j) { j[key] = value; }));
    EXPECT_TRUE(test::contains(huge, "config.json key " + key + " must be in [1, ")) << huge;
  }
}

TEST_F(HfCausalLm, ValuesHuggingFaceCannotComputeAreRefusedByKeyInOneShortLine) {
  auto llama_error = [&](const std::function<void(nlohmann::json&)>& change) {
    return pretrained_error("llama", edited_folder(dir_ + "/llama", "values", change));
  };
  EXPECT_TRUE(test::contains(llama_error([](nlohmann::json& j) { j["rope_theta"] = nullptr; }),
                             "config.json key rope_theta is null"));
  EXPECT_TRUE(test::contains(llama_error([](nlohmann::json& j) { j["rms_norm_eps"] = 0; }),
                             "config.json key rms_norm_eps must be in (0, 1], got 0"));
  EXPECT_TRUE(test::contains(llama_error([](nlohmann::json& j) { j["eos_token_id"] = "x"; }),
                             "config.json key eos_token_id must be a token id"));
  EXPECT_TRUE(test::contains(llama_error([](nlohmann::json& j) { j["eos_token_id"] = 128; }),
                             "must hold ids in [0, vocab_size 128), got 128"));
  const std::string type = llama_error([](nlohmann::json& j) { j["model_type"] = 5; });
  EXPECT_TRUE(test::contains(type, "has model_type 5, not 'llama'")) << type;
  const std::string scaling =
      llama_error([](nlohmann::json& j) { j["rope_scaling"]["rope_type"] = 3; });
  EXPECT_TRUE(test::contains(scaling, "rope_scaling.rope_type must be a string, got 3")) << scaling;
  const std::string long_text =
      llama_error([](nlohmann::json& j) { j["hidden_act"] = std::string(1000000, 'a'); });
  EXPECT_TRUE(test::contains(long_text, "key hidden_act is 'aaa")) << long_text.substr(0, 300);
  EXPECT_LT(long_text.size(), 500u);
  const std::string folder = dir_ + "/llama";
  const std::string cut = test::temp_dir() + "/cut";
  std::filesystem::remove_all(cut);
  std::filesystem::copy(folder, cut);
  test::write_file(cut + "/config.json", "{\"model_type\": \"lla");
  const std::string truncated = pretrained_error("llama", cut);
  EXPECT_TRUE(test::contains(truncated, "config.json' is not JSON: parse error at line 1"))
      << truncated;
  EXPECT_FALSE(test::contains(truncated, "json.exception")) << truncated;
}

TEST_F(HfCausalLm, TheFoldersGenerationConfigIsReadAndChecked) {
  register_builtin_models();
  const std::string eos7 = edited_folder(
      dir_ + "/gpt2", "gen7", [](nlohmann::json& j) { j["eos_token_id"] = 7; },
      "generation_config.json");
  ModelPtr m = model_registry().create(
      Config::from_string("model: {type: gpt2, args: {pretrained: " + eos7 + "}}").at("model"));
  EXPECT_EQ(nlohmann::json::parse(m->hf_info()->generation_config_json)["eos_token_id"], 7);
  const std::string x = pretrained_error(
      "gpt2", edited_folder(
                  dir_ + "/gpt2", "genx", [](nlohmann::json& j) { j["eos_token_id"] = "x"; },
                  "generation_config.json"));
  EXPECT_TRUE(test::contains(x, "generation_config.json key eos_token_id must be a token id")) << x;
  const std::string cut = edited_folder(dir_ + "/gpt2", "gencut", [](nlohmann::json&) {});
  test::write_file(cut + "/generation_config.json", "{\"eos_tok");
  const std::string truncated = pretrained_error("gpt2", cut);
  EXPECT_TRUE(test::contains(truncated, "generation_config.json' is not JSON")) << truncated;
}

TEST_F(HfCausalLm, AFreshModelLargerThanMemoryIsRefusedBeforeItIsMade) {
  const std::string path = test::write_file(
      test::temp_dir() + "/huge_config.json",
      R"({"model_type": "gpt2", "n_embd": 262144, "n_head": 4, "n_layer": 2, "n_positions": 67108864})");
  register_builtin_models();
  const std::string e = test::config_error_of([&] {
    model_registry().create(
        Config::from_string("model: {type: gpt2, args: {config: " + path + "}}").at("model"));
  });
  EXPECT_TRUE(test::contains(e, "more than the memory this process may use")) << e;
  EXPECT_TRUE(test::contains(e, "transformer.wpe.weight [67108864, 262144] from n_positions")) << e;
}

TEST_F(HfCausalLm, PytorchModelBinSmallerThanTheConfigIsRefused) {
  const std::string folder =
      edited_folder(dir_ + "/gpt2", "bin", [](nlohmann::json& j) { j["n_layer"] = 200; });
  const std::vector<char> bytes = save_tensor_dict(read_hf_weights(folder, "test"));
  std::filesystem::remove(folder + "/model.safetensors");
  test::write_file(folder + "/pytorch_model.bin", std::string(bytes.begin(), bytes.end()));
  const std::string e = pretrained_error("gpt2", folder);
  EXPECT_TRUE(test::contains(e, "config.json makes a gpt2 of")) << e;
  EXPECT_TRUE(test::contains(e, "than pytorch_model.bin's")) << e;
}

}  // namespace
}  // namespace unitrain
