#include "unitrain/models/transformer_lm.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/sgd_check.h"
#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/models/model.h"

namespace unitrain {
namespace {

ModelPtr make_lm(const std::string& yaml) {
  register_builtin_models();
  return model_registry().create(Config::from_string(yaml).at("model"));
}

const char* kSmall =
    "model: {type: transformer_lm, args: {vocab: 50, d_model: 32, layers: 2, heads: 4, "
    "seq_len: 16}}";

TEST(TransformerLm, ShapesAndParameterCount) {
  auto m = make_lm(kSmall);
  int64_t n = 0;
  for (const auto& p : m->parameters()) n += p.numel();
  EXPECT_EQ(n, 29234);  // tests/models/param_counts.py
  auto params = m->named_parameters();
  for (const char* name : {"token_embedding.weight", "position_embedding.weight",
                           "blocks.0.norm1.weight", "blocks.1.attention.qkv.weight",
                           "blocks.1.attention.out.bias", "blocks.0.feed_forward.fc.weight",
                           "blocks.0.feed_forward.proj.bias", "norm.weight", "head.weight"}) {
    EXPECT_TRUE(params.contains(name)) << name;
  }
  EXPECT_EQ(params["blocks.0.attention.qkv.weight"].sizes(), (std::vector<int64_t>{96, 32}));
  auto out = m->forward_all({torch::randint(50, {3, 16})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].sizes(), (std::vector<int64_t>{3, 16, 50}));
  EXPECT_EQ(m->forward_all({torch::randint(50, {2, 5})})[0].sizes(),
            (std::vector<int64_t>{2, 5, 50}));
}

TEST(TransformerLm, Defaults) {
  auto m = make_lm("model: {type: transformer_lm, args: {vocab: 7}}");
  auto* lm = dynamic_cast<models::TransformerLmImpl*>(m.get());
  ASSERT_NE(lm, nullptr);
  EXPECT_EQ(lm->options.d_model(), 128);
  EXPECT_EQ(lm->options.layers(), 2);
  EXPECT_EQ(lm->options.heads(), 4);
  EXPECT_EQ(lm->options.seq_len(), 128);
  EXPECT_DOUBLE_EQ(lm->options.dropout(), 0.1);
  EXPECT_EQ(lm->options.ff_mult(), 4);
  EXPECT_EQ(lm->blocks->size(), 2u);
}

TEST(TransformerLm, ItsContextLengthIsSeqLenAndItGeneratesNoText) {
  auto m = make_lm(kSmall);
  EXPECT_EQ(m->context_length(), std::optional<int64_t>(16));
  EXPECT_EQ(m->generation_model(), nullptr);
  // A model that does not say has none.
  EXPECT_EQ(make_lm("model: {type: mlp, args: {sizes: [2, 2]}}")->context_length(), std::nullopt);
  EXPECT_EQ(m->vocab_size(), std::optional<int64_t>(50));
  EXPECT_EQ(make_lm("model: {type: mlp, args: {sizes: [2, 2]}}")->vocab_size(), std::nullopt);
}

TEST(TransformerLm, IsCausal) {
  torch::manual_seed(0);
  auto m = make_lm(kSmall);
  m->eval();
  auto a = torch::randint(50, {2, 12});
  auto b = a.clone();
  b.select(1, 7).add_(1).remainder_(50);  // change token 7 only
  auto la = m->forward_all({a})[0], lb = m->forward_all({b})[0];
  EXPECT_TRUE(torch::allclose(la.slice(1, 0, 7), lb.slice(1, 0, 7), 1e-5, 1e-6));
  // Position 7 and later see the change.
  EXPECT_GT((la.slice(1, 7) - lb.slice(1, 7)).abs().amax().item<double>(), 1e-4);
  // A shorter prefix gives the same logits as the full sequence on that prefix.
  auto prefix = m->forward_all({a.slice(1, 0, 5)})[0];
  EXPECT_TRUE(torch::allclose(prefix, la.slice(1, 0, 5), 1e-5, 1e-6));
}

TEST(TransformerLm, HeadsMustDivideDModel) {
  std::string msg = test::config_error_of(
      [] { make_lm("model: {type: transformer_lm, args: {vocab: 10, d_model: 30, heads: 4}}"); });
  EXPECT_NE(msg.find("model.args.d_model"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.args.heads"), std::string::npos) << msg;
  EXPECT_THROW(models::TransformerLm(models::TransformerLmOptions(10).d_model(30)), ConfigError);
}

TEST(TransformerLm, BadArgsAndInputs) {
  EXPECT_NE(test::config_error_of([] { make_lm("model: {type: transformer_lm}"); }).find("vocab"),
            std::string::npos);
  EXPECT_NE(test::config_error_of([] {
              make_lm("model: {type: transformer_lm, args: {}}");
            }).find("missing required key model.args.vocab"),
            std::string::npos);
  EXPECT_NE(test::config_error_of([] {
              make_lm("model: {type: transformer_lm, args: {vocab: 0}}");
            }).find("model.args.vocab"),
            std::string::npos);
  auto m = make_lm(kSmall);
  std::string too_long = test::config_error_of([&] {
    m->forward_all({torch::randint(50, {1, 17})});
  });
  EXPECT_NE(too_long.find("seq_len = 16"), std::string::npos) << too_long;
  EXPECT_NE(too_long.find("[1, 17]"), std::string::npos) << too_long;
  std::string bad_id = test::config_error_of([&] {
    m->forward_all({torch::full({1, 3}, 50, torch::kLong)});
  });
  EXPECT_NE(bad_id.find("[0, vocab = 50)"), std::string::npos) << bad_id;
  std::string floats = test::config_error_of([&] { m->forward_all({torch::randn({2, 4})}); });
  EXPECT_NE(floats.find("integer token ids"), std::string::npos) << floats;
  EXPECT_THROW(m->forward_all({torch::randint(50, {4})}), ConfigError);
  EXPECT_THROW(m->forward_all({}), ConfigError);
}

TEST(TransformerLm, SgdLearnsToCopyThePreviousToken) {
  torch::set_num_threads(1);
  torch::manual_seed(0);
  auto m = make_lm(
      "model: {type: transformer_lm, args: {vocab: 8, d_model: 32, layers: 1, heads: 2, "
      "seq_len: 8, dropout: 0}}");
  // Targets are the inputs shifted by one: predict the next token of a fixed cycle.
  auto seq = torch::arange(9) % 8;
  auto x = seq.slice(0, 0, 8).unsqueeze(0).repeat({4, 1});
  auto y = seq.slice(0, 1, 9).unsqueeze(0).repeat({4, 1});
  auto [before, after] = test::sgd_losses(
      *m,
      [&] {
        auto logits = m->forward_all({x})[0];
        return torch::cross_entropy_loss(logits.reshape({-1, 8}), y.reshape({-1}));
      },
      30, 0.1);
  EXPECT_LT(after, 0.5 * before);
}

}  // namespace
}  // namespace unitrain
