// The text dataset and the tokenizer trainer, against Debian's python3-sentencepiece.
#include "unitrain/data/text_dataset.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "test_util.h"
#include "unitrain/data/build_data.h"
#include "unitrain/text/sentencepiece_model.h"
#include "unitrain/text/tokenizer_trainer.h"

namespace unitrain {
namespace {

using test::config_error_of;

/// `n` lines of words drawn by a fixed LCG, some non-ASCII, with a blank line, a line of spaces
/// and a CRLF line end among them.
std::string spm_corpus(int n) {
  static const char* kWords[] = {"call",  "me",      "ishmael", "some", "years", "ago",
                                 "never", "mind",    "how",     "long", "the",   "white",
                                 "whale", "harpoon", "ship",    "café", "naïve", "Ahab",
                                 "sea",   "über",    "deck",    "日本", "mast",  "boat"};
  uint64_t state = 12345;
  auto draw = [&](uint64_t k) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % k;
  };
  static const char* kSyllables[] = {"ka", "lo", "mi", "ra", "shi", "to", "ne", "vu"};
  auto word = [&] {
    if (draw(2) == 0) return std::string(kWords[draw(24)]);
    std::string made;  // a made-up word of 2-4 syllables
    for (uint64_t k = 2 + draw(3); k > 0; --k) made += kSyllables[draw(8)];
    return made;
  };
  std::string out;
  for (int i = 0; i < n; ++i) {
    const uint64_t words = 1 + draw(12);
    for (uint64_t w = 0; w < words; ++w) out += std::string(w ? " " : "") + word();
    out += i == 5 ? "\r\n" : "\n";
    if (i == 3) out += "\n";
    if (i == 7) out += "   \n";
  }
  return out;
}

/// A unigram tokenizer of 120 pieces, trained once by unitrain's trainer on spm_corpus(400).
const std::string& spm_test_model() {
  static const std::string path = [] {
    const std::string dir = test::temp_dir();
    TokenizerTrainOptions o;
    o.inputs = {test::write_file(dir + "/corpus.txt", spm_corpus(400))};
    o.vocab_size = 120;
    o.character_coverage = 1.0;
    o.out = dir + "/spm";
    return train_tokenizer(o);
  }();
  return path;
}

/// Runs `script` (Python with `sentencepiece as spm` and `json` imported, `sys.argv[1:]` =
/// `args`) with Debian's python3; returns the JSON it dumps to the file named by its last
/// argument. A test failure (never a skip) when python3-sentencepiece cannot run it.
nlohmann::json spm_python(const std::string& script, std::vector<std::string> args) {
  const std::string dir = test::temp_dir();
  const std::string file = test::write_file(
      dir + "/run.py", "import json, sys\nimport sentencepiece as spm\n" + script + "\n");
  args.push_back(dir + "/out.json");
  std::string cmd = "/usr/bin/python3 " + file;
  for (const auto& a : args) cmd += " '" + a + "'";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << cmd << " (python3-sentencepiece: scripts/lib.sh installs it)";
  std::ifstream in(args.back());
  if (rc != 0 || !in) return nlohmann::json::array();
  return nlohmann::json::parse(in);
}

/// Python's ids of every non-blank line of a file: [[encode(line)], [encode(line, add_bos=True,
/// add_eos=True)]].
constexpr const char* kSpmPythonLineIds = R"(
sp = spm.SentencePieceProcessor(model_file=sys.argv[1])
text = open(sys.argv[2], "rb").read().decode("utf-8")
lines = [l.rstrip("\r") for l in text.split("\n")]
lines = [l for l in lines if l.strip(" \t\r\n\f\v")]
json.dump([[sp.encode(l) for l in lines],
           [sp.encode(l, add_bos=True, add_eos=True) for l in lines]], open(sys.argv[3], "w")))";

TextOptions spm_text_options(const std::vector<std::string>& paths, TextTask task) {
  TextOptions o;
  o.paths = paths;
  o.tokenizer = spm_test_model();
  o.task = task;
  return o;
}

std::vector<int64_t> spm_ids(const torch::Tensor& t) {
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
}

TEST(TextDataset, IdsEqualPythonSentencePieceLineByLine) {
  const std::string lines = test::write_file(test::temp_dir() + "/lines.txt", spm_corpus(60));
  const nlohmann::json python = spm_python(kSpmPythonLineIds, {spm_test_model(), lines});
  ASSERT_EQ(python.size(), 2u);
  TextDataset plain(spm_text_options({lines}, TextTask::Sequence));
  TextOptions o = spm_text_options({lines}, TextTask::Sequence);
  o.add_bos = o.add_eos = true;
  TextDataset specials(o);
  ASSERT_EQ(plain.size(), 60);  // the blank line and the line of spaces are skipped
  ASSERT_EQ(python[0].size(), 60u);
  for (int64_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(spm_ids(plain.get(i).at("x")), python[0][i].get<std::vector<int64_t>>()) << i;
    EXPECT_EQ(spm_ids(specials.get(i).at("x")), python[1][i].get<std::vector<int64_t>>()) << i;
  }
  EXPECT_EQ(plain.info().at("vocab_size"), 120);
  EXPECT_EQ(plain.info().at("num_examples"), 60);
  EXPECT_EQ(plain.get(0).names(), std::vector<std::string>{"x"});
}

TEST(TextDataset, LmShiftsByOneAndMaxLengthKeepsBosAndEos) {
  const std::string lines = test::write_file(test::temp_dir() + "/lm.txt", spm_corpus(20));
  TextOptions o = spm_text_options({lines}, TextTask::Sequence);
  o.add_bos = o.add_eos = true;
  const TextDataset whole(o);
  o.task = TextTask::Lm;
  const TextDataset lm(o);
  o.max_length = 3;
  const TextDataset cut_lm(o);
  o.task = TextTask::Sequence;
  const TextDataset cut_sequence(o);
  for (int64_t i = 0; i < whole.size(); ++i) {
    const torch::Tensor ids = whole.get(i).at("x");
    const int64_t n = ids.size(0);
    const Batch e = lm.get(i);
    EXPECT_TRUE(torch::equal(e.at("x"), ids.slice(0, 0, n - 1))) << i;
    EXPECT_TRUE(torch::equal(e.at("y"), ids.slice(0, 1, n))) << i;
    EXPECT_EQ(e.at("x").scalar_type(), torch::kInt64);
    EXPECT_EQ(ids[0].item<int64_t>(), kTokenizerBosId);
    EXPECT_EQ(ids[n - 1].item<int64_t>(), kTokenizerEosId);
    // max_length 3: x holds at most 3 tokens; bos and eos stay, the text's last tokens go.
    const Batch c = cut_lm.get(i);
    const int64_t kept = std::min<int64_t>(n - 2, 2);
    EXPECT_EQ(c.at("x").size(0), std::min<int64_t>(n - 1, 3)) << i;
    EXPECT_EQ(spm_ids(c.at("x"))[0], kTokenizerBosId);
    EXPECT_EQ(spm_ids(c.at("y")).back(), kTokenizerEosId);
    EXPECT_TRUE(torch::equal(c.at("x").slice(0, 1, 1 + kept), ids.slice(0, 1, 1 + kept))) << i;
    const torch::Tensor s = cut_sequence.get(i).at("x");
    EXPECT_EQ(s.size(0), std::min<int64_t>(n, 3)) << i;
    EXPECT_EQ(spm_ids(s).back(), kTokenizerEosId);
  }
  o.max_length = 2;
  EXPECT_TRUE(test::contains(config_error_of([&] { TextDataset{o}; }),
                             "max_length 2 leaves no room for text beside the special tokens (2)"));
}

TEST(TextDataset, JsonlFieldAcrossSeveralFilesAndFormats) {
  const std::string dir = test::temp_dir();
  const std::string jsonl = test::write_file(
      dir + "/a.jsonl",
      "{\"id\": 1, \"body\": \"call me ishmael\"}\n\n"
      "{\"id\": 2, \"body\": \"the white whale\\nnever \\u00fcber\", \"x\": [1]}\r\n"
      "{\"id\": 3, \"body\": \"   \"}\n");
  const std::string txt = test::write_file(dir + "/b.txt", "some years ago\n");
  const std::string same = test::write_file(
      dir + "/same.txt", "call me ishmael\nthe white whale\nnever über\nsome years ago\n");
  TextOptions o = spm_text_options({jsonl, txt}, TextTask::Sequence);
  o.field = "body";
  const TextDataset d(o);
  ASSERT_EQ(d.size(), 3);  // the blank line and the blank text are skipped
  const SentencePieceModel model(spm_test_model());
  const std::vector<int> joined = model.encode("the white whale\nnever über");
  EXPECT_EQ(spm_ids(d.get(1).at("x")), std::vector<int64_t>(joined.begin(), joined.end()));
  const TextDataset reference(spm_text_options({same}, TextTask::Sequence));
  EXPECT_TRUE(torch::equal(d.get(0).at("x"), reference.get(0).at("x")));
  EXPECT_TRUE(torch::equal(d.get(2).at("x"), reference.get(3).at("x")));
  // An explicit format wins over the name: the JSON lines as plain text.
  o.format = TextFormat::Lines;
  const TextDataset raw(o);
  EXPECT_EQ(raw.size(), 4);
  const std::vector<int> first = model.encode("{\"id\": 1, \"body\": \"call me ishmael\"}");
  EXPECT_EQ(spm_ids(raw.get(0).at("x")), std::vector<int64_t>(first.begin(), first.end()));
}

TEST(TextDataset, BadJsonLinesNameFileLineAndKey) {
  const std::string dir = test::temp_dir();
  auto error_for = [&](const std::string& content, const std::string& field = "text") {
    TextOptions o =
        spm_text_options({test::write_file(dir + "/bad.jsonl", content)}, TextTask::Sequence);
    o.field = field;
    return config_error_of([&] { TextDataset{o}; });
  };
  const std::string good = "{\"text\": \"call me\"}\n";
  EXPECT_TRUE(test::contains(error_for(good + "\n{\"text\": \"whale\"\n"),
                             "text: '" + dir + "/bad.jsonl' line 3: not valid JSON"));
  EXPECT_TRUE(test::contains(error_for(good + "{\"body\": \"x\", \"id\": 2}\n"),
                             "line 2: no key 'text' (its keys: body, id)"));
  EXPECT_TRUE(test::contains(error_for(good + good + "{\"text\": 5}\n"),
                             "line 3: 'text' is a number, not a string"));
  EXPECT_TRUE(test::contains(error_for("[\"call me\"]\n"), "line 1: an array, not a JSON object"));
  EXPECT_TRUE(test::contains(error_for(good, "body"), "line 1: no key 'body' (its keys: text)"));
  EXPECT_TRUE(test::contains(error_for("\n  \n"), "the files hold no text"));
}

TEST(TextDataset, MissingOrCorruptFilesAndMissingPieces) {
  const std::string dir = test::temp_dir();
  const std::string lines = test::write_file(dir + "/l.txt", "call me ishmael\n");
  TextOptions o = spm_text_options({lines}, TextTask::Sequence);
  o.tokenizer = dir + "/none.model";
  EXPECT_TRUE(test::contains(config_error_of([&] { TextDataset{o}; }),
                             "tokenizer: file '" + dir + "/none.model' does not exist"));
  o.tokenizer = test::write_file(dir + "/bad.model", "not a model at all");
  EXPECT_TRUE(test::contains(config_error_of([&] { TextDataset{o}; }),
                             "tokenizer: '" + dir + "/bad.model' is not a SentencePiece model"));
  o = spm_text_options({lines, dir + "/none.txt"}, TextTask::Sequence);
  EXPECT_TRUE(test::contains(config_error_of([&] { TextDataset{o}; }),
                             "text: file '" + dir + "/none.txt' does not exist"));
  // A model without bos and eos, trained through the C++ trainer API.
  const TextLines corpus({test::write_file(dir + "/corpus.txt", spm_corpus(200))},
                         TextFormat::Lines, "text", "test");
  int64_t next = 0;
  train_sentencepiece({{"model_prefix", dir + "/plain"},
                       {"vocab_size", "60"},
                       {"bos_id", "-1"},
                       {"eos_id", "-1"},
                       {"minloglevel", "1"}},
                      [&](std::string& s) {
                        if (next == corpus.size()) return false;
                        s.assign(corpus.text(next++));
                        return true;
                      });
  o = spm_text_options({lines}, TextTask::Sequence);
  o.tokenizer = dir + "/plain.model";
  EXPECT_EQ(TextDataset(o).info().at("vocab_size"), 60);
  o.add_eos = true;
  EXPECT_TRUE(test::contains(
      config_error_of([&] { TextDataset{o}; }),
      "add_eos is true but the tokenizer '" + dir + "/plain.model' has no eos token"));
}

TEST(TextDataset, LmExampleOfOneTokenIsAnErrorNamingTheLine) {
  const SentencePieceModel model(spm_test_model());
  std::string single;
  for (const char* w : {"whale", "the", "ship", "me", "sea"}) {
    if (model.encode(w).size() == 1) single = w;
  }
  ASSERT_FALSE(single.empty()) << "no one-piece word in the test tokenizer";
  const std::string path =
      test::write_file(test::temp_dir() + "/one.txt", "call me ishmael\n\n" + single + "\n");
  TextOptions o = spm_text_options({path}, TextTask::Lm);
  const TextDataset d(o);
  EXPECT_EQ(d.get(0).at("x").size(0) + 1,
            static_cast<int64_t>(model.encode("call me ishmael").size()));
  EXPECT_TRUE(
      test::contains(config_error_of([&] { d.get(1); }),
                     "text: '" + path + "' line 3 encodes to 1 token; task lm needs at least 2"));
  o.add_bos = true;
  const Batch e = TextDataset(o).get(1);
  EXPECT_EQ(spm_ids(e.at("x")), std::vector<int64_t>{kTokenizerBosId});
  EXPECT_EQ(spm_ids(e.at("y")), std::vector<int64_t>{model.encode(single)[0]});
}

TEST(TextDataset, ConcurrentGetsGiveTheSameIds) {
  const std::string path = test::write_file(test::temp_dir() + "/c.txt", spm_corpus(300));
  TextOptions o = spm_text_options({path}, TextTask::Lm);
  o.add_bos = true;  // one-word lines are one token
  const TextDataset d(o);
  std::vector<torch::Tensor> serial;
  for (int64_t i = 0; i < d.size(); ++i) serial.push_back(d.get(i).at("y"));
  constexpr int kThreads = 4;
  std::vector<std::vector<torch::Tensor>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      seen[t].resize(static_cast<size_t>(d.size()));
      for (int round = 0; round < 5; ++round) {
        for (int64_t k = 0; k < d.size(); ++k) {
          const int64_t i = (k * (2 * t + 1) + round) % d.size();  // a different order each
          seen[t][static_cast<size_t>(i)] = d.get(i).at("y");
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    for (int64_t i = 0; i < d.size(); ++i) {
      EXPECT_TRUE(torch::equal(seen[t][static_cast<size_t>(i)], serial[static_cast<size_t>(i)]))
          << "thread " << t << " example " << i;
    }
  }
}

TEST(TextDataset, StackingVaryingLengthsSuggestsPadding) {
  const std::string path = test::write_file(
      test::temp_dir() + "/v.txt", "call me ishmael\nsome years ago never mind how long\n");
  const TextDataset d(spm_text_options({path}, TextTask::Lm));
  EXPECT_TRUE(test::contains(config_error_of([&] {
                               d.get_batch({0, 1});
                             }),
                             "examples of varying length are batched by padding them to the "
                             "longest: set data.collate: {type: pad}"));
  EXPECT_EQ(d.get_batch({1, 1}).at("x").size(0), 2);
}

TEST(TextDataset, FromConfig) {
  register_builtin_datasets();
  const std::string path = test::write_file(test::temp_dir() + "/cfg.txt", spm_corpus(10));
  const std::string yaml = "train: {type: text, args: {paths: [" + path +
                           "], tokenizer: " + spm_test_model() +
                           ", task: sequence, max_length: 4}}";
  const DataSplits s = build_data(Config(Config::from_string(yaml).node(), "data"), 0);
  EXPECT_EQ(s.train->size(), 10);
  EXPECT_EQ(s.train->info().at("vocab_size"), 120);
  EXPECT_LE(s.train->get(0).at("x").size(0), 4);
  const std::string bad = "train: {type: text, args: {paths: [" + path +
                          "], tokenizer: " + spm_test_model() + ", format: csv}}";
  EXPECT_TRUE(test::contains(
      config_error_of([&] { build_data(Config(Config::from_string(bad).node(), "data"), 0); }),
      "data.train.args.format"));
}

TEST(TokenizerTrain, PythonLoadsTheModelWithTheDocumentedIds) {
  const nlohmann::json python = spm_python(R"(
sp = spm.SentencePieceProcessor(model_file=sys.argv[1])
json.dump([sp.get_piece_size(), sp.unk_id(), sp.bos_id(), sp.eos_id(), sp.pad_id(),
           sp.id_to_piece(3)], open(sys.argv[2], "w")))",
                                           {spm_test_model()});
  EXPECT_EQ(python, nlohmann::json::parse(R"([120, 0, 1, 2, 3, "<pad>"])"));
  const std::string vocab = spm_test_model().substr(0, spm_test_model().size() - 6) + ".vocab";
  EXPECT_TRUE(std::filesystem::exists(vocab));
}

TEST(TokenizerTrain, JsonlFieldExistingOutputAndTooLargeVocab) {
  const std::string dir = test::temp_dir();
  std::string jsonl;
  const std::string corpus = spm_corpus(200);
  for (size_t p = 0, e; (e = corpus.find('\n', p)) != std::string::npos; p = e + 1) {
    jsonl += nlohmann::json{{"body", corpus.substr(p, e - p)}}.dump() + "\n";
  }
  TokenizerTrainOptions o;
  o.inputs = {test::write_file(dir + "/c.jsonl", jsonl)};
  o.field = "body";
  o.vocab_size = 50;
  o.model_type = "bpe";
  o.out = dir + "/sub/tok";
  EXPECT_EQ(train_tokenizer(o), dir + "/sub/tok.model");
  EXPECT_EQ(SentencePieceModel(dir + "/sub/tok.model").vocab_size(), 50);
  // Never over an existing model unless forced.
  EXPECT_TRUE(test::contains(config_error_of([&] { train_tokenizer(o); }),
                             "'" + dir + "/sub/tok.model' exists; pass --force"));
  o.force = true;
  o.vocab_size = 40;
  train_tokenizer(o);
  EXPECT_EQ(SentencePieceModel(dir + "/sub/tok.model").vocab_size(), 40);
  // More pieces than the text holds: SentencePiece's message, no file left behind.
  o.vocab_size = 5000;
  o.out = dir + "/big";
  EXPECT_TRUE(test::contains(test::error_of<TrainError>([&] { train_tokenizer(o); }),
                             "Vocabulary size too high (5000)"));
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().rfind("big", 0), std::string::npos) << entry.path();
  }
  o.inputs.push_back(dir + "/missing.txt");
  EXPECT_TRUE(test::contains(config_error_of([&] { train_tokenizer(o); }),
                             "tokenizer train: file '" + dir + "/missing.txt' does not exist"));
  o.inputs = {o.inputs[0]};
  o.field = "text";
  EXPECT_TRUE(test::contains(config_error_of([&] { train_tokenizer(o); }),
                             "line 1: no key 'text' (its keys: body)"));
  o.model_type = "wordpiece";
  EXPECT_TRUE(test::contains(config_error_of([&] { train_tokenizer(o); }),
                             "--model-type must be unigram, bpe, char or word"));
}

}  // namespace
}  // namespace unitrain
