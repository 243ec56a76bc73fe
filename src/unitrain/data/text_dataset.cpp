#include "unitrain/data/text_dataset.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>

#include "unitrain/core/error.h"

namespace unitrain {

void TextOptions::declare(Options<TextOptions>& o) {
  using T = TextOptions;
  o.field("paths", &T::paths)
      .required()
      .help(
          "text files read in order (.gz too): one text a line, or JSON Lines; relative to the "
          "current directory");
  o.field("format", &T::format, kTextFormatNames)
      .help(
          "lines (a text a line), jsonl (a JSON object a line), or auto: jsonl for names "
          "ending .jsonl/.json, else lines");
  o.field("field", &T::field).help("jsonl: the key whose string is the text");
  o.field("tokenizer", &T::tokenizer)
      .required()
      .help(
          "a SentencePiece .model file (unitrain tokenizer train, spm_train or Python's "
          "sentencepiece)");
  o.field("add_bos", &T::add_bos).help("put the model's bos id first");
  o.field("add_eos", &T::add_eos).help("put the model's eos id last");
  o.field("max_length", &T::max_length)
      .gt(0)
      .help(
          "the most tokens in x (longer texts lose their last text tokens; bos and eos are "
          "kept); null = no limit");
  o.field("task", &T::task, {{"lm", TextTask::Lm}, {"sequence", TextTask::Sequence}})
      .help(
          "lm: x = ids[:-1], y = ids[1:] (causal LM); sequence: x = ids (masked LM, "
          "classification)");
}

namespace {

/// The id of a special piece the options ask for; ConfigError when the model has none.
int64_t special_id(bool wanted, int64_t id, const char* key, const SentencePieceModel& model) {
  if (!wanted) return -1;
  UT_CHECK(id >= 0, "text: ", key, " is true but the tokenizer '", model.path(), "' has no ",
           key == std::string("add_bos") ? "bos" : "eos",
           " piece (train one with unitrain tokenizer train, which adds <s> and </s>, or set ", key,
           ": false)");
  return id;
}

}  // namespace

TextDataset::TextDataset(const TextOptions& o)
    : lines_(o.paths, o.format, o.field, "text"),
      tokenizer_(o.tokenizer),
      bos_(special_id(o.add_bos, tokenizer_.bos_id(), "add_bos", tokenizer_)),
      eos_(special_id(o.add_eos, tokenizer_.eos_id(), "add_eos", tokenizer_)),
      task_(o.task) {
  const int64_t specials = (bos_ >= 0) + (eos_ >= 0);
  if (o.max_length) {
    UT_CHECK(*o.max_length > specials, "text: max_length ", *o.max_length,
             " leaves no room for text beside bos/eos; make it at least ", specials + 1);
    max_tokens_ = *o.max_length + (task_ == TextTask::Lm ? 1 : 0);
  }
  UT_CHECK(lines_.size() > 0, "text: the files hold no text (every line is blank)");
  spdlog::info("text: {} texts ({} bytes) from {} file(s), tokenizer '{}' of {} pieces",
               lines_.size(), lines_.bytes(), o.paths.size(), o.tokenizer, tokenizer_.vocab_size());
}

Batch TextDataset::get(int64_t index) const {
  UT_CHECK(index >= 0 && index < size(), "text: example index ", index, " is out of range [0, ",
           size(), ")");
  const std::vector<int> ids = tokenizer_.encode(lines_.text(index));
  const int64_t specials = (bos_ >= 0) + (eos_ >= 0);
  auto kept = static_cast<int64_t>(ids.size());
  if (max_tokens_ > 0) kept = std::min(kept, max_tokens_ - specials);
  const int64_t n = kept + specials;
  torch::Tensor tokens = torch::empty({n}, torch::kInt64);
  int64_t* out = tokens.data_ptr<int64_t>();
  if (bos_ >= 0) *out++ = bos_;
  out = std::copy(ids.begin(), ids.begin() + kept, out);
  if (eos_ >= 0) *out = eos_;
  if (task_ == TextTask::Sequence) return {{"x", tokens}};
  UT_CHECK(n >= 2, "text: ", lines_.where(index), " encodes to ", n, n == 1 ? " token" : " tokens",
           "; task lm needs at least 2 (x = ids[:-1], y = ids[1:]): set add_bos: true, "
           "or remove the line");
  return {{"x", tokens.slice(0, 0, n - 1)}, {"y", tokens.slice(0, 1, n)}};
}

std::map<std::string, int64_t> TextDataset::info() const {
  return {{"vocab_size", tokenizer_.vocab_size()}, {"num_examples", size()}};
}

void register_text_dataset() {
  dataset_registry().add<TextOptions>(
      "text",
      "lines or JSON Lines of text, tokenised by a SentencePiece model in the loader threads: "
      "x (and y for lm) int64 [L] of varying length",
      [](const TextOptions& o) -> DatasetPtr { return std::make_shared<TextDataset>(o); });
}

}  // namespace unitrain
