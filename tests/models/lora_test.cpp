#include "unitrain/models/lora.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "parallel/run_ranks.h"
#include "test_util.h"
#include "unitrain/checkpoint/safetensors.h"
#include "unitrain/core/config.h"
#include "unitrain/core/error.h"
#include "unitrain/core/options.h"
#include "unitrain/models/hf_lm_parts.h"
#include "unitrain/models/model.h"
#include "unitrain/models/transformer_lm.h"
#include "unitrain/parallel/tensor_parallel.h"

namespace unitrain {
namespace {

using models::add_lora_adapters;

/// The values tests/models/lora/reference.py computes with PEFT's equations, made once.
std::map<std::string, torch::Tensor> reference() {
  static std::map<std::string, torch::Tensor> tensors = [] {
    const std::string out = test::temp_dir() + "/lora_reference.safetensors";
    const std::string cmd =
        "/usr/bin/python3 " + test::source_dir() + "/tests/models/lora/reference.py " + out;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << " failed (python3-torch)";
    std::map<std::string, torch::Tensor> m;
    for (auto& [name, t] : read_safetensors(out, "test").tensors) m[name] = t;
    return m;
  }();
  return tensors;
}

LoraOptions options(int64_t r, double alpha, bool rslora, const std::string& target) {
  LoraOptions o;
  o.r = r;
  o.alpha = alpha;
  o.rslora = rslora;
  o.target_modules = {target};
  return o;
}

/// A layer `proj` (Linear, or Conv1D for fan_in_fan_out) with reference case `c`'s weights and
/// adapter, run forward and backward as the reference did; each result within 1e-5.
void check_case(const std::string& c, int64_t r, double alpha, bool rslora, bool conv1d) {
  auto ref = reference();
  auto at = [&](const std::string& k) { return ref.at(c + "." + k); };
  torch::nn::Module parent;
  torch::nn::Linear linear{nullptr};
  models::Conv1D conv{nullptr};
  torch::nn::Module* layer = nullptr;
  const int64_t in = at("x").size(-1), out = at("y").size(-1);
  if (conv1d) {
    conv = parent.register_module("proj", models::Conv1D(in, out));
    layer = conv.get();
  } else {
    linear = parent.register_module("proj", torch::nn::Linear(in, out));
    layer = linear.get();
  }
  auto adapted = add_lora_adapters(parent, options(r, alpha, rslora, "proj"));
  ASSERT_EQ(adapted.size(), 1u);
  EXPECT_EQ(adapted[0].fan_in_fan_out, conv1d);
  {
    torch::NoGradGuard no_grad;
    auto params = layer->named_parameters();
    params["weight"].copy_(at("weight"));
    params["bias"].copy_(at("bias"));
    params["lora_A.weight"].copy_(at("lora_A"));
    params["lora_B.weight"].copy_(at("lora_B"));
  }
  auto x = at("x").clone().requires_grad_(true);
  auto y = conv1d ? models::project(conv, x) : models::project(linear, x);
  (y * at("g")).sum().backward();
  auto params = layer->named_parameters();
  EXPECT_TRUE(torch::allclose(y, at("y"), 1e-5, 1e-5)) << c;
  EXPECT_TRUE(torch::allclose(x.grad(), at("grad_x"), 1e-5, 1e-5)) << c;
  EXPECT_TRUE(torch::allclose(params["lora_A.weight"].grad(), at("grad_weight_A"), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(params["lora_B.weight"].grad(), at("grad_weight_B"), 1e-5, 1e-5));
  EXPECT_FALSE(params["weight"].grad().defined()) << "the base is frozen";
  EXPECT_FALSE(params["bias"].grad().defined());

  EXPECT_EQ(models::merge_lora_adapters(parent), 1u);
  EXPECT_EQ(layer->named_parameters().size(), 2u) << "the adapter is gone";
  EXPECT_TRUE(
      torch::allclose(layer->named_parameters()["weight"], at("merged_weight"), 1e-5, 1e-5));
  torch::NoGradGuard no_grad;
  auto merged = conv1d ? models::project(conv, at("x")) : models::project(linear, at("x"));
  EXPECT_TRUE(torch::allclose(merged, at("y"), 1e-5, 1e-5)) << c;
}

TEST(Lora, ForwardBackwardAndMergeMatchPeftsEquations) {
  check_case("linear", 3, 6.0, false, false);
  check_case("rslora", 4, 8.0, true, false);
}

TEST(Lora, Gpt2Conv1DIsFanInFanOut) { check_case("conv1d", 2, 5.0, false, true); }

TEST(Lora, AStartsAsNnLinearsInitBStartsAtZeroSoTheLayerIsUnchanged) {
  torch::manual_seed(3);
  torch::nn::Module parent;
  auto linear = parent.register_module("fc", torch::nn::Linear(64, 32));
  auto x = torch::randn({4, 64});
  auto before = linear->forward(x);
  add_lora_adapters(parent, options(8, 16, false, "fc"));
  auto a = linear->named_parameters()["lora_A.weight"];
  auto b = linear->named_parameters()["lora_B.weight"];
  ASSERT_EQ(a.sizes(), torch::IntArrayRef({8, 64}));
  ASSERT_EQ(b.sizes(), torch::IntArrayRef({32, 8}));
  // kaiming_uniform(a = sqrt(5)): U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as nn.Linear's weight.
  const double bound = 1.0 / std::sqrt(64.0);
  EXPECT_LE(a.abs().max().item<double>(), bound);
  EXPECT_GT(a.abs().max().item<double>(), 0.95 * bound);
  EXPECT_NEAR(a.mean().item<double>(), 0.0, 0.02);
  EXPECT_TRUE(b.eq(0).all().item<bool>());
  EXPECT_TRUE(torch::equal(models::project(linear, x), before));
  EXPECT_FALSE(linear->weight.requires_grad());
  EXPECT_TRUE(a.requires_grad() && b.requires_grad());
}

TEST(Lora, TargetsArePeftsSuffixesAndUnknownOnesAreNamed) {
  models::TransformerLm lm(
      models::TransformerLmOptions(11).d_model(8).layers(2).heads(2).seq_len(6));
  auto adapted = add_lora_adapters(*lm, options(2, 4, false, "attention.qkv"));
  ASSERT_EQ(adapted.size(), 2u);
  EXPECT_EQ(adapted[0].name, "blocks.0.attention.qkv");
  EXPECT_EQ(models::lora_layers(*lm).size(), 2u);
  int64_t trainable = 0;
  for (const auto& p : lm->named_parameters()) {
    if (p.value().requires_grad()) {
      ++trainable;
      EXPECT_NE(p.key().find(".lora_"), std::string::npos) << p.key();
    }
  }
  EXPECT_EQ(trainable, 4);

  models::TransformerLm other(models::TransformerLmOptions(11).d_model(8).layers(1).heads(2));
  const std::string unknown =
      test::config_error_of([&] { add_lora_adapters(*other, options(2, 4, false, "q_proj")); });
  EXPECT_TRUE(test::contains(unknown, "model.lora.target_modules: 'q_proj' names no layer"))
      << unknown;
  EXPECT_TRUE(test::contains(unknown, "fc, head, out, proj, qkv")) << unknown;
  const std::string norm =
      test::config_error_of([&] { add_lora_adapters(*other, options(2, 4, false, "norm1")); });
  EXPECT_TRUE(test::contains(norm, "LoRA adapts Linear layers")) << norm;
}

models::TransformerLm tiny_lora_lm() {
  return models::TransformerLm(
      models::TransformerLmOptions(11).d_model(8).layers(2).heads(2).seq_len(6));
}

LoraOptions pattern_options(const std::string& pattern) {
  LoraOptions o = options(2, 4, false, "");
  o.target_modules.clear();
  o.target_pattern = pattern;
  return o;
}

std::vector<std::string> adapted_names(torch::nn::Module& m, const LoraOptions& o) {
  std::vector<std::string> names;
  for (const auto& l : add_lora_adapters(m, o)) names.push_back(l.name);
  return names;
}

TEST(Lora, TargetModulesTakeAListAllLinearOrARegexAndABadValueShowsNames) {
  const auto parse = [](const std::string& yaml) {
    return options_of<LoraOptions>().parse(Config::from_string(yaml));
  };
  const LoraOptions list = parse("target_modules: [q_proj, v_proj]");
  EXPECT_EQ(list.target_modules, (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(list.target_pattern, "");
  EXPECT_TRUE(list.modules_to_save.empty());
  const LoraOptions all = parse("target_modules: ALL-linear\nmodules_to_save: [lm_head]");
  EXPECT_TRUE(all.all_linear() && all.target_modules.empty());
  EXPECT_EQ(all.modules_to_save, std::vector<std::string>{"lm_head"});
  EXPECT_EQ(parse(R"(target_modules: '.*\.(q_proj|v_proj)')").target_pattern,
            R"(.*\.(q_proj|v_proj))");
  const std::string map = test::config_error_of([&] { parse("target_modules: {q_proj: 1}"); });
  EXPECT_TRUE(test::contains(map,
                             "target_modules: expected a list of layer names such as "
                             "[q_proj, v_proj], all-linear or a regular expression"))
      << map;
  const std::string one =
      test::config_error_of([&] { parse("target_modules: [q]\nmodules_to_save: lm_head"); });
  EXPECT_TRUE(test::contains(one, "modules_to_save: expected a list of string such as [a, b]"))
      << one;
  const std::string bad = test::config_error_of([&] { parse("target_modules: 'q_(proj'"); });
  EXPECT_TRUE(test::contains(bad, "target_modules: 'q_(proj' is not a regular expression")) << bad;
}

TEST(Lora, AllLinearAdaptsEveryLinearLayerButTheOutputLayer) {
  auto lm = tiny_lora_lm();
  const auto names = adapted_names(*lm, pattern_options("all-linear"));
  ASSERT_EQ(names.size(), 8u);  // qkv, out, fc, proj in 2 blocks; not the head
  EXPECT_EQ(names.front(), "blocks.0.attention.qkv");
  for (const auto& n : names) EXPECT_EQ(n.find("head"), std::string::npos) << n;
  EXPECT_EQ(models::target_modules_naming(*lm, names),
            (std::vector<std::string>{"fc", "out", "proj", "qkv"}));
}

TEST(Lora, ARegexMustMatchALayersWholeName) {
  auto lm = tiny_lora_lm();
  EXPECT_EQ(adapted_names(*lm, pattern_options(R"(.*\.(qkv|fc))")),
            (std::vector<std::string>{"blocks.0.attention.qkv", "blocks.0.feed_forward.fc",
                                      "blocks.1.attention.qkv", "blocks.1.feed_forward.fc"}));
  auto other = tiny_lora_lm();
  const std::string part =
      test::config_error_of([&] { add_lora_adapters(*other, pattern_options("qkv")); });
  EXPECT_TRUE(test::contains(part,
                             "model.lora.target_modules: 'qkv' matches no layer's whole "
                             "name"))
      << part;
  const std::string block =
      test::config_error_of([&] { add_lora_adapters(*other, pattern_options(R"(blocks\.0.*)")); });
  EXPECT_TRUE(test::contains(block, "the pattern names blocks.0, a ")) << block;
}

TEST(Lora, ModulesToSaveTrainInFullAndTakeNoAdapter) {
  auto lm = tiny_lora_lm();
  LoraOptions o = pattern_options("all-linear");
  o.modules_to_save = {"blocks.0"};
  const auto names = adapted_names(*lm, o);
  ASSERT_EQ(names.size(), 4u);
  EXPECT_EQ(names.front(), "blocks.1.attention.qkv");
  // Last names would also name block 0's layers: the whole names are written.
  EXPECT_EQ(models::target_modules_naming(*lm, names).front(), "blocks.1.attention.out");
  EXPECT_EQ(models::lora_modules_to_save(*lm, o), std::vector<std::string>{"blocks.0"});
  for (const auto& p : lm->named_parameters()) {
    const bool trains =
        p.key().rfind("blocks.0.", 0) == 0 || p.key().find(".lora_") != std::string::npos;
    EXPECT_EQ(p.value().requires_grad(), trains) << p.key();
  }
  auto other = tiny_lora_lm();
  LoraOptions head = options(2, 4, false, "head");
  head.modules_to_save = {"head"};
  const std::string both = test::config_error_of([&] { add_lora_adapters(*other, head); });
  EXPECT_TRUE(test::contains(both,
                             "'head' names only modules that model.lora.modules_to_save "
                             "trains in full"))
      << both;
  head.modules_to_save = {"lm_head"};
  const std::string unknown = test::config_error_of([&] { add_lora_adapters(*other, head); });
  EXPECT_TRUE(test::contains(unknown, "model.lora.modules_to_save: 'lm_head' names no module"))
      << unknown;
}

TEST(Lora, AnAdaptedModelEqualsItsMergeAndStartsAsItsBase) {
  torch::manual_seed(5);
  models::TransformerLm lm(
      models::TransformerLmOptions(13).d_model(16).layers(2).heads(2).seq_len(8).dropout(0.0));
  lm->eval();
  auto ids = torch::randint(13, {2, 8});
  auto base = lm->forward(ids);
  add_lora_adapters(*lm, options(4, 8, false, "qkv"));
  EXPECT_TRUE(torch::equal(lm->forward(ids), base)) << "B = 0: step 0 is the base model";
  {
    torch::NoGradGuard no_grad;
    for (auto& p : lm->named_parameters()) {
      if (p.key().find("lora_B") != std::string::npos) p.value().normal_(0, 0.5);
    }
  }
  auto adapted = lm->forward(ids);
  EXPECT_FALSE(torch::allclose(adapted, base, 1e-3, 1e-3));
  models::merge_lora_adapters(*lm);
  EXPECT_TRUE(torch::allclose(lm->forward(ids), adapted, 1e-5, 1e-5));
}

/// gpt2 and llama (from a config.json: fresh weights) adapted on every projection: the merged
/// model's logits are the adapted one's (1e-5), the adapters start as the base.
TEST(Lora, Gpt2AndLlamaMergedGiveTheAdaptedLogits) {
  register_builtin_models();
  const std::string dir = test::temp_dir() + "/lora_hf";
  std::filesystem::create_directories(dir);
  const std::map<std::string, std::string> configs = {
      {"gpt2", R"({"model_type": "gpt2", "vocab_size": 50, "n_positions": 16, "n_embd": 16,
                   "n_layer": 2, "n_head": 2, "attn_pdrop": 0, "embd_pdrop": 0, "resid_pdrop": 0})"},
      {"llama", R"({"model_type": "llama", "vocab_size": 50, "hidden_size": 16,
                    "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "max_position_embeddings": 16,
                    "tie_word_embeddings": false})"}};
  const std::map<std::string, std::vector<std::string>> targets = {
      {"gpt2", {"c_attn", "c_proj", "c_fc"}},
      {"llama",
       {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"}}};
  for (const auto& [type, json] : configs) {
    const std::string path = test::write_file(dir + "/" + type + ".json", json);
    torch::manual_seed(7);
    ModelPtr m = model_registry().create(
        Config::from_string("model: {type: " + type + ", args: {config: " + path + "}}")
            .at("model"));
    m->eval();
    auto ids = torch::randint(50, {2, 10});
    auto base = m->forward_all({ids})[0];
    LoraOptions o = options(4, 8, false, "");
    o.target_modules = targets.at(type);
    const auto adapted_layers = add_lora_adapters(*m, o);
    EXPECT_EQ(adapted_layers.size(), type == "gpt2" ? 8u : 15u) << type;
    EXPECT_TRUE(torch::equal(m->forward_all({ids})[0], base)) << type;
    {
      torch::NoGradGuard no_grad;
      for (auto& p : m->named_parameters()) {
        if (p.key().find("lora_B") != std::string::npos) p.value().normal_(0, 0.2);
      }
    }
    auto adapted = m->forward_all({ids})[0];
    EXPECT_FALSE(torch::allclose(adapted, base, 1e-3, 1e-3)) << type;
    models::merge_lora_adapters(*m);
    auto merged = m->forward_all({ids})[0];
    EXPECT_TRUE(torch::allclose(merged, adapted, 1e-5, 1e-5))
        << type << ": " << (merged - adapted).abs().max().item<double>();
  }
}

/// A column- then a row-parallel layer, or their whole Linear pair: fc then proj.
struct Pair : torch::nn::Module {
  explicit Pair(const std::shared_ptr<ProcessGroup>& group) {
    if (group) {
      cut_fc = register_module("fc", ColumnParallelLinear(4, 12, true, group));
      cut_proj = register_module("proj", RowParallelLinear(12, 4, true, group));
    } else {
      fc = register_module("fc", torch::nn::Linear(4, 12));
      proj = register_module("proj", torch::nn::Linear(12, 4));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    if (cut_fc) return models::project(cut_proj, torch::gelu(models::project(cut_fc, x)));
    return models::project(proj, torch::gelu(models::project(fc, x)));
  }
  torch::nn::Linear fc{nullptr}, proj{nullptr};
  ColumnParallelLinear cut_fc{nullptr};
  RowParallelLinear cut_proj{nullptr};
};

TEST(Lora, AnAdapterOnALayerCutOverATensorGroupComputesTheWholeAdaptersTermAndGradients) {
  torch::manual_seed(11);
  const auto x = torch::randn({3, 4}), r = torch::randn({3, 4});
  LoraOptions o = options(2, 4, false, "fc");
  o.target_modules.push_back("proj");
  Pair whole(nullptr);
  models::add_lora_adapters(whole, o, "model.lora", at::make_generator<at::CPUGeneratorImpl>(7));
  {
    torch::NoGradGuard no_grad;  // B away from zero: its term counts
    for (auto& p : whole.named_parameters()) {
      if (p.key().find("lora_B") != std::string::npos) p.value().normal_();
    }
  }
  (whole.forward(x) * r).sum().backward();
  std::map<std::string, torch::Tensor> want, grads;
  for (const auto& p : whole.named_parameters()) {
    want[p.key()] = p.value().detach();
    if (p.value().grad().defined()) grads[p.key()] = p.value().grad();
  }
  const auto out = whole.forward(x).detach();
  test::run_shared_ranks(2, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    Pair cut(group);
    models::add_lora_adapters(cut, o, "model.lora", at::make_generator<at::CPUGeneratorImpl>(7));
    std::map<std::string, tp::Split> splits;
    for (const auto& [name, split] : tp::splits_of(cut)) splits[name] = split;
    // The adapters cut with their layers: fc's B by rows, proj's A by columns.
    EXPECT_EQ(splits.count("fc.lora_B.weight"), 1u);
    EXPECT_EQ(splits.count("proj.lora_A.weight"), 1u);
    EXPECT_EQ(splits.count("fc.lora_A.weight") + splits.count("proj.lora_B.weight"), 0u);
    auto part = [&](const std::string& name, const torch::Tensor& t) {
      const auto it = splits.find(name);
      return it == splits.end() ? t : tp::part_of(t, it->second.dim, rank, 2, it->second.blocks);
    };
    // Drawn whole from the same generator, then cut: the one-process adapter's A.
    EXPECT_TRUE(cut.named_parameters()["proj.lora_A.weight"].equal(
        part("proj.lora_A.weight", want["proj.lora_A.weight"])));
    EXPECT_TRUE(cut.named_parameters()["fc.lora_A.weight"].equal(want["fc.lora_A.weight"]));
    {
      torch::NoGradGuard no_grad;
      for (auto& p : cut.named_parameters()) p.value().copy_(part(p.key(), want[p.key()]));
    }
    const auto got = cut.forward(x);
    EXPECT_TRUE(torch::allclose(got, out, 1e-5, 1e-6));
    (got * r).sum().backward();
    for (const auto& p : cut.named_parameters()) {
      if (!p.value().requires_grad()) continue;
      ASSERT_TRUE(grads.count(p.key())) << p.key();
      EXPECT_TRUE(torch::allclose(p.value().grad(), part(p.key(), grads[p.key()]), 1e-5, 1e-6))
          << p.key();
    }
  });
}

}  // namespace
}  // namespace unitrain
