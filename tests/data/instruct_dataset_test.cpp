// The instruct dataset: templates, labels on the responses only, eos, truncation, packing.
#include "unitrain/data/instruct_dataset.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "unitrain/core/config.h"
#include "unitrain/text/chat_template.h"

namespace unitrain {
namespace {

using test::config_error_of;

/// A word-level tokenizer.json (Whitespace pre-tokenizer): <unk> 0, the words 1.., <eos> last;
/// tokenizer_config.json beside it names eos (and `chat_template` when given).
std::string write_tokenizer(const std::string& dir, const std::string& chat_template = "") {
  const std::vector<std::string> words{
      "<unk>", "###",  "Instruction", ":",        "Response",      "sky", "blue",  "grass",
      "green", "what", "is",          "<|user|>", "<|assistant|>", "hi",  "hello", "<eos>"};
  nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array();
  for (size_t i = 0; i < words.size(); ++i) {
    vocab[words[i]] = i;
    if (words[i].front() == '<') {
      added.push_back({{"id", i},
                       {"content", words[i]},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", true}});
    }
  }
  nlohmann::json tok{{"version", "1.0"},
                     {"added_tokens", added},
                     {"normalizer", nullptr},
                     {"pre_tokenizer", {{"type", "Whitespace"}}},
                     {"post_processor", nullptr},
                     {"decoder", nullptr},
                     {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}}}};
  nlohmann::json config{{"eos_token", "<eos>"}};
  if (!chat_template.empty()) config["chat_template"] = chat_template;
  test::write_file(dir + "/tokenizer_config.json", config.dump());
  return test::write_file(dir + "/tokenizer.json", tok.dump());
}

InstructOptions options(const std::string& dir, const std::string& lines) {
  InstructOptions o;
  o.paths = {test::write_file(dir + "/data.jsonl", lines)};
  o.tokenizer = write_tokenizer(dir);
  return o;
}

std::vector<int64_t> ids(const torch::Tensor& t) {
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
}

TEST(InstructDataset, LabelsOnTheResponseAndEosOnly) {
  const std::string dir = test::temp_dir();
  InstructOptions o = options(dir, R"({"prompt": "what is sky", "response": "blue"})"
                                   "\n");
  o.template_text = "### Instruction : {prompt} ### Response :";
  const Batch b = InstructDataset(o).get(0);
  // ### Instruction : what is sky ### Response : blue <eos>
  const std::vector<int64_t> all{1, 2, 3, 9, 10, 5, 1, 4, 3, 6, 15};
  EXPECT_EQ(ids(b.at("x")), std::vector<int64_t>(all.begin(), all.end() - 1));
  EXPECT_EQ(ids(b.at("y")),
            (std::vector<int64_t>{-100, -100, -100, -100, -100, -100, -100, -100, 6, 15}));
  EXPECT_FALSE(b.has("segments"));
}

TEST(InstructDataset, ChatTrainsEveryAssistantMessage) {
  const std::string dir = test::temp_dir();
  InstructOptions o = options(
      dir,
      R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},)"
      R"( {"role": "user", "content": "what is grass"}, {"role": "assistant", "content": "green"}]})"
      "\n");
  o.chat_template = "<|{role}|> {content}";
  const Batch b = InstructDataset(o).get(0);
  // <|user|> hi <|assistant|> hello <eos> <|user|> what is grass <|assistant|> green <eos>
  EXPECT_EQ(ids(b.at("x")), (std::vector<int64_t>{11, 13, 12, 14, 15, 11, 9, 10, 7, 12, 8}));
  EXPECT_EQ(ids(b.at("y")),
            (std::vector<int64_t>{-100, -100, 14, 15, -100, -100, -100, -100, -100, 8, 15}));
}

TEST(InstructDataset, TruncationSidesAndPacking) {
  const std::string dir = test::temp_dir();
  InstructOptions o = options(dir, R"({"prompt": "what is sky", "response": "blue"})"
                                   "\n"
                                   R"({"prompt": "grass", "response": "green"})"
                                   "\n"
                                   R"({"prompt": "hi", "response": "hello"})"
                                   "\n");
  o.template_text = "{prompt} :";
  o.max_length = 3;  // what is sky : blue <eos> -> 4 of 6 tokens
  EXPECT_EQ(ids(InstructDataset(o).get(0).at("x")), (std::vector<int64_t>{9, 10, 5}));
  o.truncation = Truncation::Left;
  EXPECT_EQ(ids(InstructDataset(o).get(0).at("x")), (std::vector<int64_t>{5, 3, 6}));
  EXPECT_EQ(ids(InstructDataset(o).get(0).at("y")), (std::vector<int64_t>{-100, 6, 15}));
  o.max_length = 7;
  o.pack = true;  // lengths 5, 3, 3: windows [5], [3, 3]
  const InstructDataset packed(o);
  ASSERT_EQ(packed.size(), 2);
  const Batch w = packed.get(1);
  EXPECT_EQ(ids(w.at("x")), (std::vector<int64_t>{7, 3, 8, 13, 3, 14}));
  EXPECT_EQ(ids(w.at("y")), (std::vector<int64_t>{-100, 8, 15, -100, 14, 15}));
  EXPECT_EQ(ids(w.at("segments")), (std::vector<int64_t>{1, 1, 1, 2, 2, 2}));
}

TEST(InstructDataset, SaysOnceHowManyExamplesTheCutLeftWithoutAResponse) {
  const std::string dir = test::temp_dir();
  InstructOptions o = options(dir, R"({"prompt": "what is sky", "response": "blue"})"
                                   "\n"
                                   R"({"prompt": "grass", "response": "green"})"
                                   "\n");
  o.template_text = "{prompt} :";
  o.max_length = 3;  // what is sky : | blue <eos>: the response is cut away
  testing::internal::CaptureStderr();
  InstructDataset{o};
  const std::string right = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(test::contains(right, "1 of 2 examples are longer than max_length 3")) << right;
  EXPECT_TRUE(test::contains(right, "the response's end); 1 have no response token")) << right;
  EXPECT_TRUE(test::contains(right, "truncation: left")) << right;
  o.truncation = Truncation::Left;  // the prompt's start is cut; every response is kept
  testing::internal::CaptureStderr();
  InstructDataset{o};
  const std::string left = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(test::contains(left, "the prompt's start); 0 have no response token")) << left;
  o.max_length = 8;
  testing::internal::CaptureStderr();
  InstructDataset{o};
  const std::string none = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(test::contains(none, "max_length")) << none;
}

TEST(InstructDataset, RefusesBadLinesTemplatesAndUnknownFields) {
  const std::string dir = test::temp_dir();
  const std::string chat = R"({"messages": [{"role": "assistant", "content": "hi"}]})"
                           "\n";
  InstructOptions o = options(dir, chat);
  o.tokenizer = write_tokenizer(
      dir,
      "{% if messages[0].role != 'user' %}{{ raise_exception('user first, please') }}"
      "{% endif %}");
  std::string error = config_error_of([&] { InstructDataset{o}; });
  EXPECT_TRUE(test::contains(error, "line 1: ")) << error;
  EXPECT_TRUE(test::contains(error, "the template raised: user first, please")) << error;
  o.chat_template = "<|{role}|> {content}";  // given in the config: the tokenizer's is not read
  EXPECT_EQ(InstructDataset(o).size(), 1);
  o.chat_template = "line one\n{% for m in messages %}{{ m.content }";
  error = config_error_of([&] { InstructDataset{o}; });
  EXPECT_TRUE(test::contains(error, "data: instruct: chat_template, line 2: TemplateSyntaxError"))
      << error;
  o = options(dir, chat);
  EXPECT_TRUE(test::contains(config_error_of([&] { InstructDataset{o}; }),
                             "line 1 holds chat messages but there is no chat template"));
  o = options(dir, R"({"prompt": "hi"})"
                   "\n");
  EXPECT_TRUE(test::contains(config_error_of([&] { InstructDataset{o}; }),
                             "line 1: 'response' is not a string (it is missing)"));
  o = options(dir, R"({"prompt": "hi", "response": "hello"})"
                   "\n");
  o.template_text = "{question} :";
  EXPECT_TRUE(test::contains(config_error_of([&] { InstructDataset{o}; }), "has '{question}'"));
}

TEST(InstructDataset, ChatLinesThroughTheFoldersJinjaTemplateTrainTheAssistantTurns) {
  // A hub folder's Jinja chat_template renders chat lines (bos and each turn's end are its
  // own: no special prefix, no eos added); prompt and response lines train beside it as ever.
  const std::string dir = test::temp_dir();
  InstructOptions o = options(dir, R"({"prompt": "what is sky", "response": "blue"})"
                                   "\n"
                                   R"({"messages": [{"role": "user", "content": "sky"}, )"
                                   R"({"role": "assistant", "content": "blue"}, )"
                                   R"({"role": "user", "content": "grass"}, )"
                                   R"({"role": "assistant", "content": "green"}]})"
                                   "\n");
  o.tokenizer = write_tokenizer(dir,
                                "{% for m in messages %}<|{{ m.role }}|> {{ m.content }} <eos> "
                                "{% endfor %}{% if add_generation_prompt %}<|assistant|>"
                                "{% endif %}");
  const InstructDataset d(o);
  EXPECT_EQ(d.size(), 2);
  const InstructTokens t = d.tokens(1);
  // <|user|> sky <eos> <|assistant|> blue <eos> <|user|> grass <eos> <|assistant|> green <eos>
  EXPECT_EQ(t.ids, (std::vector<int64_t>{11, 5, 15, 12, 6, 15, 11, 7, 15, 12, 8, 15}));
  // A turn is what it adds to the prompt that ends in the generation prompt: its content and eos.
  EXPECT_EQ(t.trained, (std::vector<uint8_t>{0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1}));
  o.chat_loss = ChatLoss::Last;
  EXPECT_EQ(InstructDataset(o).tokens(1).trained,
            (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1}));
}

TEST(InstructDataset, ChatTemplateVarsReachTheTemplateTyped) {
  // YAML's plain true and 3 arrive as a bool and an int, a quoted '5' as a string (Qwen3's
  // `enable_thinking is false` needs the bool).
  const std::string dir = test::temp_dir();
  InstructOptions o = options(dir, R"({"messages": [{"role": "user", "content": "sky"}, )"
                                   R"({"role": "assistant", "content": "blue"}]})"
                                   "\n");
  o.tokenizer = write_tokenizer(dir,
                                "{% for m in messages %}<|{{ m.role }}|> {{ m.content }} "
                                "{% if flag is true and n == 3 and s == '5' %}hello {% endif %}"
                                "<eos> {% endfor %}{% if add_generation_prompt %}<|assistant|>"
                                "{% endif %}");
  EXPECT_EQ(InstructDataset(o).tokens(0).ids, (std::vector<int64_t>{11, 5, 15, 12, 6, 15}));
  o.chat_template_vars = Config::from_string("v: {flag: true, n: 3, s: '5'}").at("v");
  const InstructTokens t = InstructDataset(o).tokens(0);
  EXPECT_EQ(t.ids, (std::vector<int64_t>{11, 5, 14, 15, 12, 6, 14, 15}));
  EXPECT_EQ(t.trained, (std::vector<uint8_t>{0, 0, 0, 0, 0, 1, 1, 1}));
  o.chat_template_vars = Config::from_string("v: [1, 2]").at("v");
  EXPECT_TRUE(test::contains(config_error_of([&] { InstructDataset{o}; }),
                             "must be a map of names to values"));
}

TEST(InstructDataset, HubTemplatesMaskTheTokensTheRustTokenizersOffsetsGive) {
  // Llama 3's, Llama-3.1's, Qwen2.5's and Gemma-3's own folders: each conversation tokenized as
  // apply_chat_template(tokenize=True) and the Rust tokenizers give, and trained on exactly the
  // tokens whose offsets overlap an assistant turn (tests/text/chat_mask_reference.mjs).
  const std::string refs = test::chat_template_references();
  std::map<std::string, nlohmann::json> conversations;  // template -> case -> messages
  std::ifstream cases(refs + "/cases.jsonl");
  for (std::string line; std::getline(cases, line);) {
    const nlohmann::json c = nlohmann::json::parse(line);
    conversations[c["template"]][std::to_string(c["case"].get<int>())] = c["vars"]["messages"];
  }
  std::map<std::string, std::vector<nlohmann::json>> masks;
  std::ifstream in(refs + "/masks.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json m = nlohmann::json::parse(line);
    masks[m["template"]].push_back(m);
  }
  ASSERT_EQ(masks.size(), 4u);
  for (const auto& [name, expected] : masks) {
    EXPECT_GE(expected.size(), 40u) << name;
    const std::string dir = test::temp_dir();
    std::string lines;
    for (const auto& m : expected) {
      // The case's messages in the file's own order of keys (role, content).
      const std::string id = std::to_string(m["case"].get<int>());
      lines += nlohmann::ordered_json{{"messages", conversations[name][id]}}.dump() + "\n";
    }
    InstructOptions o;
    o.paths = {test::write_file(dir + "/chat.jsonl", lines)};
    o.tokenizer = refs + "/" + name + "/tokenizer.json";
    const InstructDataset d(o);
    for (size_t i = 0; i < expected.size(); ++i) {
      const InstructTokens t = d.tokens(static_cast<int64_t>(i));
      const std::string id = name + " case " + std::to_string(expected[i]["case"].get<int>());
      EXPECT_EQ(t.ids, expected[i]["ids"].get<std::vector<int64_t>>()) << id;
      EXPECT_EQ(t.trained, expected[i]["trained"].get<std::vector<uint8_t>>()) << id;
    }
  }
}

TEST(InstructDataset, RefusesATruncatedTokenizerConfig) {
  const std::string dir = test::temp_dir();
  InstructOptions o = options(dir, R"({"prompt": "sky", "response": "blue"})"
                                   "\n");
  test::write_file(dir + "/tokenizer_config.json", R"({"eos_token": "<eo)");
  const std::string error = config_error_of([&] { InstructDataset{o}; });
  EXPECT_TRUE(test::contains(error, "tokenizer_config.json")) << error;
}

}  // namespace
}  // namespace unitrain
