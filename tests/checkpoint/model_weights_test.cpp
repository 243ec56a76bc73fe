#include "unitrain/checkpoint/model_weights.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

#include "test_util.h"
#include "unitrain/checkpoint/safetensors.h"

namespace unitrain {
namespace {

std::vector<std::string> names_of(const NamedTensors& tensors) {
  std::vector<std::string> out;
  for (const auto& [name, t] : tensors) out.push_back(name);
  return out;
}

NamedTensors named(const std::vector<std::string>& names) {
  NamedTensors out;
  for (const auto& n : names) out.emplace_back(n, torch::zeros({1}));
  return out;
}

TEST(ModelWeights, ReadsSafetensorsFilesByNameOrBytes) {
  const std::string dir = test::temp_dir();
  write_safetensors(dir + "/w.bin", {{"fc.weight", torch::ones({2, 2})}});
  const NamedTensors read = read_model_weights(dir + "/w.bin", "teacher.weights");
  ASSERT_EQ(names_of(read), std::vector<std::string>{"fc.weight"});
  EXPECT_TRUE(torch::equal(read[0].second, torch::ones({2, 2})));
  test::write_file(dir + "/bad.safetensors", "not a safetensors file");
  EXPECT_TRUE(test::contains(
      test::error_of<ConfigError>([&] { read_model_weights(dir + "/bad.safetensors", "k"); }),
      "k: '" + dir + "/bad.safetensors' is not a valid safetensors file"));
}

TEST(ModelWeights, RenameKeysReplacesTheLongestMatchingPrefix) {
  const NamedTensors renamed = rename_keys(
      named({"transformer.h.0.w", "transformer.wte.w", "lm_head.w"}),
      {{"transformer.", ""}, {"transformer.wte.", "embed."}, {"", "net."}}, "model.init_key_map");
  EXPECT_EQ(names_of(renamed), (std::vector<std::string>{"h.0.w", "embed.w", "net.lm_head.w"}));
}

TEST(ModelWeights, RenameKeysRefusesUnusedPrefixesAndCollisions) {
  const std::string unused = test::error_of<ConfigError>([] {
    rename_keys(named({"a.w", "a.b"}), {{"model.", ""}}, "model.init_key_map");
  });
  EXPECT_TRUE(test::contains(unused,
                             "model.init_key_map: no tensor name begins with \"model.\" "
                             "(the file's names: a.w, a.b)"))
      << unused;
  const std::string collision = test::error_of<ConfigError>([] {
    rename_keys(named({"x.w", "y.w"}), {{"x.", ""}, {"y.", ""}}, "model.init_key_map");
  });
  EXPECT_TRUE(test::contains(collision, "'x.w' and 'y.w' both become 'w'")) << collision;
}

TEST(ModelWeights, KeyMapHintFindsTheOnePrefixRename) {
  const std::string key = "model.init_key_map";
  EXPECT_EQ(key_map_hint({"transformer.h.0.w", "transformer.h.1.w"}, {"h.0.w", "h.1.w"}, key),
            "; the file's names start with \"transformer.\" where the model's start with \"\": set "
            "model.init_key_map: {\"transformer.\": \"\"} to rename them");
  EXPECT_TRUE(
      test::contains(key_map_hint({"0.weight", "0.bias"}, {"net.0.weight", "net.0.bias"}, key),
                     "{\"\": \"net.\"}"));
  EXPECT_TRUE(test::contains(key_map_hint({"model.fc.w", "extra"}, {"net.fc.w"}, key),
                             "{\"model.\": \"net.\"}"));
  EXPECT_EQ(key_map_hint({"a.w"}, {"a.w"}, key), "");                // nothing to rename
  EXPECT_EQ(key_map_hint({"a.w", "b.x"}, {"a.w", "c.y"}, key), "");  // not a prefix rename
}

TEST(ModelWeights, KeyMapHintGivesARenameForEveryPrefix) {
  const std::string key = "model.init_key_map";
  EXPECT_EQ(key_map_hint({"p.a", "q.b"}, {"a", "b"}, key),
            "; the file's names start with other prefixes than the model's (\"p.\" where the "
            "model's have \"\", \"q.\" where the model's have \"\"): set model.init_key_map: "
            "{\"p.\": \"\", \"q.\": \"\"} to rename them");
  // A language model saved with two prefixes: its body's and its head's, which is named
  // differently too. Every tensor ends in .weight: the head's rename is the one whose names
  // no other rename takes.
  const std::vector<std::string> file = {
      "transformer.token_embedding.weight", "transformer.blocks.0.fc.weight",
      "transformer.blocks.0.fc.bias", "transformer.norm.weight", "lm_head.weight"};
  const std::vector<std::string> model = {"token_embedding.weight", "blocks.0.fc.weight",
                                          "blocks.0.fc.bias", "norm.weight", "head.weight"};
  const std::string hint = key_map_hint(file, model, key);
  EXPECT_TRUE(test::contains(hint,
                             "set model.init_key_map: {\"lm_head.\": \"head.\", "
                             "\"transformer.\": \"\"}"))
      << hint;
  // What the hint says loads every name.
  const NamedTensors renamed =
      rename_keys(named(file), {{"lm_head.", "head."}, {"transformer.", ""}}, key);
  std::vector<std::string> names;
  for (const auto& [n, t] : renamed) names.push_back(n);
  std::sort(names.begin(), names.end());
  std::vector<std::string> expected = model;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(names, expected);
  // Renames that would lose a name that already fits are not suggested.
  EXPECT_EQ(key_map_hint({"0.w", "head.w"}, {"net.0.w", "head.w"}, key), "");
}

TEST(ModelWeights, KeyMapHintRenamesOnlyTensorsThatFit) {
  // Another model's checkpoint whose names happen to end alike: no rename between tensors of
  // other shapes is suggested (following it would fail on the shapes).
  const std::string key = "model.init_key_map";
  const std::vector<std::string> file = {"blocks.0.out.weight", "blocks.0.out.bias"};
  const std::vector<std::string> model = {"layers.0.weight", "layers.0.bias"};
  EXPECT_FALSE(key_map_hint(file, model, key).empty());  // by the names alone
  EXPECT_EQ(
      key_map_hint(file, model, key, [](const std::string&, const std::string&) { return false; }),
      "");
  EXPECT_FALSE(key_map_hint(file, model, key, [](const std::string& u, const std::string& m) {
                 return u.substr(u.rfind('.')) == m.substr(m.rfind('.'));
               }).empty());
}

}  // namespace
}  // namespace unitrain
