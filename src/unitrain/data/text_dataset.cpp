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
          "sentencepiece) or a Hugging Face tokenizer.json (a name ending .json, or JSON "
          "content)");
  o.field("add_special_tokens", &T::add_special_tokens)
      .help(
          "a tokenizer.json: put its post_processor's special tokens around each text (e.g. "
          "Llama-3's <|begin_of_text|>, BERT's [CLS] and [SEP]), as transformers' tokenizer(text) "
          "does; SentencePiece models have none");
  o.field("add_bos", &T::add_bos)
      .help("put the tokenizer's bos id first (not twice when the post_processor put it there)");
  o.field("add_eos", &T::add_eos)
      .help("put the tokenizer's eos id last (not twice when the post_processor put it there)");
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

/// The id of a special token the options ask for; ConfigError when the tokenizer has none.
int64_t special_id(int64_t id, const char* key, const Tokenizer& tokenizer) {
  UT_CHECK(id >= 0, "text: ", key, " is true but the tokenizer '", tokenizer.path(), "' has no ",
           key == std::string("add_bos") ? "bos" : "eos",
           " token (train one with unitrain tokenizer train, which adds <s> and </s>; for a "
           "tokenizer.json, give its tokenizer_config.json beside it; or set ",
           key, ": false)");
  return id;
}

/// The ids around a text: the post_processor's (when `o.add_special_tokens`), then bos and eos
/// when asked and not already there.
void special_ids(const TextOptions& o, const Tokenizer& tokenizer, std::vector<int64_t>& prefix,
                 std::vector<int64_t>& suffix) {
  if (o.add_special_tokens) {
    prefix.assign(tokenizer.special_prefix().begin(), tokenizer.special_prefix().end());
    suffix.assign(tokenizer.special_suffix().begin(), tokenizer.special_suffix().end());
  }
  if (o.add_bos) {
    const int64_t bos = special_id(tokenizer.bos_id(), "add_bos", tokenizer);
    if (prefix.empty() || prefix.front() != bos) prefix.insert(prefix.begin(), bos);
  }
  if (o.add_eos) {
    const int64_t eos = special_id(tokenizer.eos_id(), "add_eos", tokenizer);
    if (suffix.empty() || suffix.back() != eos) suffix.push_back(eos);
  }
}

}  // namespace

TextDataset::TextDataset(const TextOptions& o)
    : lines_(o.paths, o.format, o.field, "text"),
      tokenizer_(load_tokenizer(o.tokenizer)),
      task_(o.task) {
  special_ids(o, *tokenizer_, prefix_, suffix_);
  const auto specials = static_cast<int64_t>(prefix_.size() + suffix_.size());
  if (o.max_length) {
    UT_CHECK(*o.max_length > specials, "text: max_length ", *o.max_length,
             " leaves no room for text beside the special tokens (", specials,
             "); make it at least ", specials + 1);
    max_tokens_ = *o.max_length + (task_ == TextTask::Lm ? 1 : 0);
  }
  UT_CHECK(lines_.size() > 0, "text: the files hold no text (every line is blank)");
  spdlog::info("text: {} texts ({} bytes) from {} file(s), tokenizer '{}' of {} pieces",
               lines_.size(), lines_.bytes(), o.paths.size(), o.tokenizer,
               tokenizer_->vocab_size());
}

Batch TextDataset::get(int64_t index) const {
  UT_CHECK(index >= 0 && index < size(), "text: example index ", index, " is out of range [0, ",
           size(), ")");
  const std::vector<int> ids = tokenizer_->encode(lines_.text(index));
  const auto specials = static_cast<int64_t>(prefix_.size() + suffix_.size());
  auto kept = static_cast<int64_t>(ids.size());
  if (max_tokens_ > 0) kept = std::min(kept, max_tokens_ - specials);
  const int64_t n = kept + specials;
  torch::Tensor tokens = torch::empty({n}, torch::kInt64);
  int64_t* out = tokens.data_ptr<int64_t>();
  out = std::copy(prefix_.begin(), prefix_.end(), out);
  out = std::copy(ids.begin(), ids.begin() + kept, out);
  std::copy(suffix_.begin(), suffix_.end(), out);
  if (task_ == TextTask::Sequence) return {{"x", tokens}};
  UT_CHECK(n >= 2, "text: ", lines_.where(index), " encodes to ", n, n == 1 ? " token" : " tokens",
           "; task lm needs at least 2 (x = ids[:-1], y = ids[1:]): set add_bos: true, "
           "or remove the line");
  return {{"x", tokens.slice(0, 0, n - 1)}, {"y", tokens.slice(0, 1, n)}};
}

std::map<std::string, int64_t> TextDataset::info() const {
  std::map<std::string, int64_t> info{{"vocab_size", tokenizer_->vocab_size()},
                                      {"num_examples", size()}};
  if (tokenizer_->pad_id() >= 0) info["pad_id"] = tokenizer_->pad_id();  // pad's `auto`
  return info;
}

void register_text_dataset() {
  dataset_registry().add<TextOptions>(
      "text",
      "lines or JSON Lines of text, tokenised by a SentencePiece model or a Hugging Face "
      "tokenizer.json in the loader threads: "
      "x (and y for lm) int64 [L] of varying length",
      [](const TextOptions& o) -> DatasetPtr { return std::make_shared<TextDataset>(o); });
}

}  // namespace unitrain
