#include "unitrain/text/hf_tokenizer.h"

#include <atomic>
#include <filesystem>
#include <sstream>
#include <unordered_map>

#include "unitrain/core/error.h"
#include "unitrain/core/file_bytes.h"
#include "unitrain/core/json_excerpt.h"
#include "unitrain/text/hf_tokenizer/added_tokens.h"
#include "unitrain/text/hf_tokenizer/byte_level.h"
#include "unitrain/text/hf_tokenizer/components.h"
#include "unitrain/text/hf_tokenizer/json_at.h"
#include "unitrain/text/hf_tokenizer/unicode_text.h"
#include "unitrain/text/hf_tokenizer/word_cache.h"

namespace unitrain {
namespace {

using hf::JsonAt;

std::atomic<uint64_t> next_serial{1};

/// The most ids below the largest that no token may have (gaps in a vocabulary happen; ids of
/// 2^31 in a vocabulary of thousands do not).
constexpr int64_t kUnusedIdsLimit = 1 << 16;

/// `text` as JSON; ConfigError "`invalid` (at byte N)`hint`" when it is not.
nlohmann::json parse_json(const std::string& text, const std::string& invalid,
                          const std::string& hint = "") {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(invalid + " (at byte " + std::to_string(e.byte) + ")" + hint);
  }
}

/// OpenAI's GPT-2 files, `encoder.json` (token -> id, read as `vocab`) and the `vocab.bpe` beside
/// it (a "#version" line, then one merge "a b" a line), as the tokenizer.json Hugging Face's gpt2
/// has: byte-level BPE with GPT-2's pattern, <|endoftext|> an added special token.
nlohmann::json gpt2_tokenizer_json(nlohmann::json vocab, const std::string& bpe_path) {
  std::istringstream lines(read_file_bytes(bpe_path, "tokenizer"));
  nlohmann::json merges = nlohmann::json::array();
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    merges.push_back(line);
  }
  nlohmann::json added = nlohmann::json::array();
  if (vocab.contains("<|endoftext|>")) {
    added.push_back({{"id", vocab["<|endoftext|>"]},
                     {"content", "<|endoftext|>"},
                     {"special", true},
                     {"normalized", false}});
  }
  const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}};
  return {{"added_tokens", added},
          {"pre_tokenizer", byte_level},
          {"post_processor", byte_level},
          {"decoder", byte_level},
          {"model", {{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", merges}}}};
}

/// A token name from tokenizer_config.json: "<s>" or {"content": "<s>", ...}.
/// tokenizer_config.json's `key` (a token's text, or {"content": text, ...}); "" when absent or
/// null. ConfigError naming the file (`where`) and the key for any other value.
std::string config_token(const nlohmann::json& config, const char* key, const std::string& where) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  throw ConfigError(where + "'): " + key +
                    " is neither a token's text nor {\"content\": text} (a " + it->type_name() +
                    ")");
}

}  // namespace

struct HfTokenizer::Parts {
  std::string path;
  uint64_t serial = next_serial++;
  std::unique_ptr<hf::Normalizer> normalizer;
  std::unique_ptr<hf::PreTokenizer> pre_tokenizer;
  std::unique_ptr<hf::Model> model;
  std::unique_ptr<hf::PostProcessor> post_processor;
  std::unique_ptr<hf::Decoder> decoder;
  std::vector<hf::AddedToken> added;
  std::unique_ptr<hf::AddedTokenFinder> raw_tokens;         ///< found in the raw text
  std::unique_ptr<hf::AddedTokenFinder> normalized_tokens;  ///< found after the normalizer
  std::vector<std::string> tokens;                          ///< id -> token
  std::vector<bool> special;                                ///< id -> an added special token
  std::vector<int> prefix, suffix;  ///< the post_processor's ids around one text
  int64_t bos = -1, eos = -1, pad = -1, unk = -1;

  void read(const JsonAt& root);
  /// added_tokens, each checked (an id below 2^31, a content).
  void read_added_tokens(const JsonAt& root);
  /// The id table's length (the largest id + 1, vocab's and added tokens'); fails naming the
  /// key when it runs far past the tokens there are.
  int64_t id_table_size(const JsonAt& root) const;
  /// The post_processor and the ids it puts around one text (prefix, suffix).
  void read_post_processor(const JsonAt& root, int64_t size);
  void find_special_ids(const JsonAt& root);
  int64_t id_of(const std::string& token) const;
  void encode_text(std::string_view text, bool first, std::vector<int>& ids) const;
};

void HfTokenizer::Parts::read(const JsonAt& root) {
  if (!root.value().is_object())
    root.fail("should be a JSON object (a Hugging Face tokenizer.json)");
  model = hf::make_model(root.at("model"));
  if (auto j = root.find("normalizer")) normalizer = hf::make_normalizer(*j);
  if (auto j = root.find("pre_tokenizer")) pre_tokenizer = hf::make_pre_tokenizer(*j);
  if (auto j = root.find("decoder")) decoder = hf::make_decoder(*j);
  read_added_tokens(root);
  const int64_t size = id_table_size(root);
  tokens.assign(static_cast<size_t>(size), std::string());
  special.assign(static_cast<size_t>(size), false);
  for (const auto& [token, id] : model->vocab()) tokens[id] = token;
  std::vector<const hf::AddedToken*> raw, normalized;
  for (const hf::AddedToken& t : added) {
    tokens[t.id] = t.content;
    special[t.id] = t.special;
    (t.normalized && normalizer ? normalized : raw).push_back(&t);
  }
  raw_tokens = std::make_unique<hf::AddedTokenFinder>(raw);
  normalized_tokens = std::make_unique<hf::AddedTokenFinder>(normalized);
  read_post_processor(root, size);
  find_special_ids(root);
}

void HfTokenizer::Parts::read_added_tokens(const JsonAt& root) {
  const auto list = root.find("added_tokens");
  if (!list) return;
  for (const JsonAt& item : list->items()) {
    hf::AddedToken t;
    t.id = item.at("id").id_below(int64_t{1} << 31, "2^31");
    t.content = item.at("content").str();
    if (t.content.empty()) item.at("content").fail("is empty");
    t.special = item.bool_or("special", false);
    t.normalized = item.bool_or("normalized", !t.special);
    t.lstrip = item.bool_or("lstrip", false);
    t.rstrip = item.bool_or("rstrip", false);
    t.single_word = item.bool_or("single_word", false);
    added.push_back(t);
  }
}

int64_t HfTokenizer::Parts::id_table_size(const JsonAt& root) const {
  // The ids run to the largest one, every id below it a row of the table: ids far past the
  // tokens there are (2^31 for a vocabulary of 5) would make a table of gigabytes.
  int64_t size = 0;
  const std::string* largest = nullptr;
  for (const auto& [token, id] : model->vocab()) {
    if (id + 1 > size) size = id + 1, largest = &token;
  }
  const auto check_size = [&](int64_t entries, const JsonAt& at, const std::string& what) {
    if (size > entries + kUnusedIdsLimit) {
      at.fail(what + " " + std::to_string(size - 1) + ", far past the " + std::to_string(entries) +
              " tokens of model.vocab and added_tokens (at most " +
              std::to_string(kUnusedIdsLimit) + " ids may be left unused)");
    }
  };
  check_size(static_cast<int64_t>(model->vocab().size()), root.at("model").at("vocab"),
             largest ? "gives token '" + largest->substr(0, 80) + "' the id" : "has the id");
  if (added.empty()) return size;
  const int64_t entries = static_cast<int64_t>(model->vocab().size() + added.size());
  const std::vector<JsonAt> items = root.at("added_tokens").items();  // added's, in order
  for (size_t i = 0; i < added.size(); ++i) {
    size = std::max<int64_t>(size, added[i].id + 1);
    check_size(entries, items[i].at("id"), "is");
  }
  return size;
}

void HfTokenizer::Parts::read_post_processor(const JsonAt& root, int64_t size) {
  if (auto j = root.find("post_processor")) post_processor = hf::make_post_processor(*j, size);
  if (!post_processor) return;
  const std::vector<int> marked = post_processor->process({-7}, nullptr);  // -7: the text's ids
  const auto at = std::find(marked.begin(), marked.end(), -7);
  if (at == marked.end() || std::count(marked.begin(), marked.end(), -7) != 1) {
    root.at("post_processor").fail("does not put a single text once ($A once in \"single\")");
  }
  prefix.assign(marked.begin(), at);
  suffix.assign(at + 1, marked.end());
}

int64_t HfTokenizer::Parts::id_of(const std::string& token) const {
  if (token.empty()) return -1;
  for (const hf::AddedToken& t : added) {
    if (t.content == token) return t.id;
  }
  auto it = model->vocab().find(token);
  return it == model->vocab().end() ? -1 : it->second;
}

void HfTokenizer::Parts::find_special_ids(const JsonAt& root) {
  const auto named = [&](std::initializer_list<const char*> names) -> int64_t {
    for (const char* name : names) {
      for (const hf::AddedToken& t : added) {
        if (t.special && t.content == name) return t.id;
      }
    }
    return -1;
  };
  unk = model->unk_id();
  const auto config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  std::error_code error;
  if (std::filesystem::is_regular_file(config_path, error)) {
    // A truncated or corrupt one is an error, not a reason to guess the ids.
    const std::string where =
        "tokenizer '" + path + "': the tokenizer_config.json beside it ('" + config_path.string();
    const nlohmann::json config = parse_json(read_file_bytes(config_path.string(), "tokenizer"),
                                             where + "') is not valid JSON");
    if (!config.is_object()) throw ConfigError(where + "') is not a JSON object");
    // bos and eos must be tokens of the tokenizer (a model ends its texts with eos); a pad
    // token it lacks is one transformers would add: read as none.
    for (auto [key, id] :
         {std::pair<const char*, int64_t*>{"bos_token", &bos}, {"eos_token", &eos}}) {
      const std::string token = config_token(config, key, where);
      *id = id_of(token);
      if (!token.empty() && *id < 0) {
        throw ConfigError(where + "'): " + key + " '" + text_excerpt(token, 80) +
                          "' is not a token of the tokenizer");
      }
    }
    pad = id_of(config_token(config, "pad_token", where));
    return;
  }
  if (!prefix.empty() && special[prefix.front()]) bos = prefix.front();
  if (!suffix.empty() && special[suffix.back()]) eos = suffix.back();
  if (bos < 0)
    bos = named({"<s>", "<|begin_of_text|>", "<|startoftext|>", "<bos>", "[CLS]", "<|endoftext|>"});
  if (eos < 0) eos = named({"</s>", "<|end_of_text|>", "<|endoftext|>", "<eos>", "[SEP]"});
  if (auto padding = root.find("padding")) {
    const auto id = padding->find("pad_id");
    pad = id ? id->token_id(static_cast<int64_t>(tokens.size())) : -1;
  } else {
    pad = named({"<pad>", "[PAD]", "<|pad|>", "<|padding|>"});
  }
}

void HfTokenizer::Parts::encode_text(std::string_view text, bool first,
                                     std::vector<int>& ids) const {
  std::string normalized;
  if (normalizer) {
    normalized.assign(text);
    normalizer->normalize(normalized);
    text = normalized;
  }
  hf::WordCache& cache = hf::WordCache::of(serial);
  std::vector<int> word;
  hf::Pieces pieces;
  for (const hf::Segment& segment : normalized_tokens->split(text)) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
      continue;
    }
    pieces.texts.assign(1, std::string(segment.text));
    pieces.byte_level = false;
    if (pre_tokenizer) pre_tokenizer->split(pieces, first && segment.text.data() == text.data());
    // The cache's keys are the pieces before a pending byte-level mapping: a word seen before
    // skips it.
    for (const std::string& piece : pieces.texts) {
      size_t count = 0;
      if (const int* found = cache.find(piece, &count)) {
        ids.insert(ids.end(), found, found + count);
        continue;
      }
      word.clear();
      model->tokenize(pieces.byte_level ? hf::to_byte_level(piece) : piece, word);
      cache.insert(piece, word);
      ids.insert(ids.end(), word.begin(), word.end());
    }
  }
}

HfTokenizer::HfTokenizer(const std::string& path) : parts_(std::make_unique<Parts>()) {
  parts_->path = path;
  nlohmann::json root =
      parse_json(read_file_bytes(path, "tokenizer"), "tokenizer '" + path + "' is not valid JSON",
                 "; a Hugging Face tokenizer.json was expected");
  const auto bpe = std::filesystem::path(path).parent_path() / "vocab.bpe";
  std::error_code error;
  const bool has_model = root.is_object() && root.contains("model") && root["model"].is_object();
  if (root.is_object() && !has_model && std::filesystem::is_regular_file(bpe, error)) {
    root = gpt2_tokenizer_json(std::move(root), bpe.string());  // GPT-2's encoder.json
  }
  parts_->read(JsonAt(root, "", parts_->path));
}

HfTokenizer::~HfTokenizer() = default;

std::vector<int> HfTokenizer::encode(std::string_view text) const { return encode(text, false); }

std::vector<int> HfTokenizer::encode(std::string_view input, bool add_special_tokens) const {
  const std::string repaired = hf::is_valid_utf8(input) ? std::string() : hf::valid_utf8(input);
  const std::string_view text = repaired.empty() ? input : std::string_view(repaired);
  std::vector<int> ids;
  ids.reserve(text.size() / 3 + 4);
  for (const hf::Segment& segment : parts_->raw_tokens->split(text)) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
    } else if (!segment.text.empty()) {
      parts_->encode_text(segment.text, segment.text.data() == text.data(), ids);
    }
  }
  if (add_special_tokens && parts_->post_processor)
    return parts_->post_processor->process(ids, nullptr);
  return ids;
}

std::vector<int> HfTokenizer::encode_pair(std::string_view first, std::string_view second,
                                          bool add_special_tokens) const {
  const std::vector<int> a = encode(first, false), b = encode(second, false);
  if (add_special_tokens && parts_->post_processor) return parts_->post_processor->process(a, &b);
  std::vector<int> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

const std::vector<int>& HfTokenizer::special_prefix() const { return parts_->prefix; }
const std::vector<int>& HfTokenizer::special_suffix() const { return parts_->suffix; }

std::string HfTokenizer::decode(const std::vector<int>& ids) const { return decode(ids, false); }

std::string HfTokenizer::decode(const std::vector<int>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int id : ids) {
    UT_CHECK(id >= 0 && id < vocab_size(), "tokenizer '", parts_->path, "': id ", id,
             " is out of range [0, ", vocab_size(), ")");
    if (skip_special_tokens && parts_->special[id]) continue;
    tokens.push_back(parts_->tokens[id]);
  }
  if (!parts_->decoder) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  parts_->decoder->decode(tokens);
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

std::string HfTokenizer::id_to_token(int64_t id) const {
  UT_CHECK(id >= 0 && id < vocab_size(), "tokenizer '", parts_->path, "': id ", id,
           " is out of range [0, ", vocab_size(), ")");
  return parts_->tokens[id];
}

int64_t HfTokenizer::token_to_id(const std::string& token) const { return parts_->id_of(token); }
int64_t HfTokenizer::vocab_size() const { return static_cast<int64_t>(parts_->tokens.size()); }
int64_t HfTokenizer::bos_id() const { return parts_->bos; }
int64_t HfTokenizer::eos_id() const { return parts_->eos; }
int64_t HfTokenizer::pad_id() const { return parts_->pad; }
int64_t HfTokenizer::unk_id() const { return parts_->unk; }
const std::string& HfTokenizer::path() const { return parts_->path; }

}  // namespace unitrain
