// The instruct dataset: templates, labels on the responses only, eos, truncation, packing.
#include "unitrain/data/instruct_dataset.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "test_util.h"
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

TEST(InstructDataset, RefusesJinjaBadLinesAndUnknownFields) {
  const std::string dir = test::temp_dir();
  const std::string chat = R"({"messages": [{"role": "assistant", "content": "hi"}]})"
                           "\n";
  InstructOptions o = options(dir, chat);
  o.tokenizer = write_tokenizer(dir, "{% for m in messages %}{{ m.content }}{% endfor %}");
  EXPECT_TRUE(test::contains(config_error_of([&] { InstructDataset{o}; }),
                             "tokenizer_config.json: its chat_template is a Jinja template"));
  o.chat_template = "<|{role}|> {content}";  // given in the config: the tokenizer's is not read
  EXPECT_EQ(InstructDataset(o).size(), 1);
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

TEST(InstructDataset, PromptResponseLinesNeedNoChatTemplateBesideAHubJinjaOne) {
  // Every hub instruct folder's tokenizer_config.json holds a Jinja chat_template: prompt and
  // response lines train beside it, and a chat line is refused with Llama 3's plain turns.
  const std::string dir = test::temp_dir();
  InstructOptions o = options(dir, R"({"prompt": "what is sky", "response": "blue"})"
                                   "\n");
  o.tokenizer =
      write_tokenizer(dir,
                      "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>"
                      "{{ m.content }}<|eot_id|>{% endfor %}");
  EXPECT_EQ(InstructDataset(o).size(), 1);
  o.paths = {test::write_file(dir + "/chat.jsonl",
                              R"({"prompt": "sky", "response": "blue"})"
                              "\n"
                              R"({"messages": [{"role": "assistant", "content": "hi"}]})"
                              "\n")};
  const std::string error = config_error_of([&] { InstructDataset{o}; });
  EXPECT_TRUE(test::contains(error, "chat.jsonl' line 2 holds chat messages")) << error;
  EXPECT_TRUE(test::contains(error, "<|start_header_id|>{role}<|end_header_id|>")) << error;
  EXPECT_FALSE(test::contains(error, "im_start")) << error;
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
