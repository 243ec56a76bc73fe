// The models of tokenizer.json. BPE: a vocabulary and ranked merges, applied lowest rank first
// with a priority queue (as Hugging Face's Word::merge_all), with continuing_subword_prefix,
// end_of_word_suffix, unk_token and fuse_unk, byte_fallback and ignore_merges. Unigram is
// unigram.cpp's.
#include "unitrain/text/hf_tokenizer/models.h"

#include <array>
#include <cstdio>
#include <queue>

#include "unitrain/text/hf_tokenizer/components.h"
#include "unitrain/text/hf_tokenizer/json_at.h"
#include "unitrain/text/hf_tokenizer/unicode_text.h"
#include "unitrain/text/hf_tokenizer/unigram.h"

namespace unitrain::hf {
namespace {

uint64_t pair_key(int left, int right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

class BpeModel : public Model {
 public:
  explicit BpeModel(const JsonAt& json)
      : vocab_(read_vocab(json.at("vocab"))),
        prefix_(json.str_or("continuing_subword_prefix", "")),
        suffix_(json.str_or("end_of_word_suffix", "")),
        fuse_unk_(json.bool_or("fuse_unk", false)),
        byte_fallback_(json.bool_or("byte_fallback", false)),
        ignore_merges_(json.bool_or("ignore_merges", false)) {
    if (auto dropout = json.find("dropout")) {
      if (!dropout->value().is_number() || dropout->value().get<double>() != 0.0) {
        dropout->fail("is " + json_preview(dropout->value()) +
                      ": BPE dropout (random merges while training) is not implemented; make "
                      "it null");
      }
    }
    unk_id_ = token_id(json, "unk_token", vocab_);
    read_merges(json.at("merges"));
    byte_ids_ = byte_fallback_ids(vocab_);
  }

  void tokenize(std::string_view piece, std::vector<int>& ids) const override {
    if (ignore_merges_) {
      auto it = vocab_.find(std::string(piece));
      if (it != vocab_.end()) {
        ids.push_back(it->second);
        return;
      }
    }
    std::vector<int> symbols = initial_symbols(piece);
    if (symbols.size() > 1) merge(symbols);
    for (int id : symbols) {
      if (id >= 0) ids.push_back(id);
    }
  }
  const std::unordered_map<std::string, int>& vocab() const override { return vocab_; }
  int unk_id() const override { return unk_id_; }

 private:
  struct Merge {
    int rank, id;
  };

  void read_merges(const JsonAt& merges) {
    const std::vector<JsonAt> items = merges.items();
    merges_.reserve(items.size());
    const auto id_of = [&](const std::string& token, const JsonAt& at, const char* what) {
      auto it = vocab_.find(token);
      if (it == vocab_.end())
        at.fail(std::string(what) + " '" + token + "', which is not in model.vocab");
      return it->second;
    };
    for (size_t rank = 0; rank < items.size(); ++rank) {
      const JsonAt& item = items[rank];
      std::string left, right;
      if (item.value().is_string()) {  // "a b"
        const std::string& text = item.str();
        const size_t space = text.find(' ');
        if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
          item.fail("should be two tokens parted by one space, not '" + text + "'");
        }
        left = text.substr(0, space);
        right = text.substr(space + 1);
      } else {  // ["a", "b"]
        const std::vector<JsonAt> pair = item.items();
        if (pair.size() != 2) item.fail("should be a pair of tokens");
        left = pair[0].str();
        right = pair[1].str();
      }
      const std::string joined =
          left +
          (right.compare(0, prefix_.size(), prefix_) == 0 ? right.substr(prefix_.size()) : right);
      const int left_id = id_of(left, item, "has"), right_id = id_of(right, item, "has");
      merges_.emplace(pair_key(left_id, right_id),
                      Merge{static_cast<int>(rank), id_of(joined, item, "makes")});
    }
  }

  /// One id a character (with the prefix after the first, the suffix on the last); a character
  /// missing from the vocabulary becomes its <0xXX> bytes (byte_fallback) or unk (fused when
  /// fuse_unk), or nothing when the model has no unk, as in Hugging Face's BPE.
  std::vector<int> initial_symbols(std::string_view piece) const {
    std::vector<int> symbols;
    symbols.reserve(piece.size());
    std::string key;
    bool pending_unk = false;
    for (size_t i = 0; i < piece.size();) {
      const size_t start = i;
      i += utf8_length(static_cast<unsigned char>(piece[i]));
      const std::string_view c = piece.substr(start, i - start);
      key.clear();
      if (start > 0) key += prefix_;
      key += c;
      if (i >= piece.size()) key += suffix_;
      auto it = vocab_.find(key);
      if (it != vocab_.end()) {
        if (pending_unk) symbols.push_back(unk_id_), pending_unk = false;
        symbols.push_back(it->second);
        continue;
      }
      if (byte_fallback_) {
        bool all = true;
        for (char b : c) all = all && byte_ids_[static_cast<unsigned char>(b)] >= 0;
        if (all) {
          if (pending_unk) symbols.push_back(unk_id_), pending_unk = false;
          for (char b : c) symbols.push_back(byte_ids_[static_cast<unsigned char>(b)]);
          continue;
        }
      }
      if (unk_id_ < 0) continue;
      if (pending_unk && !fuse_unk_) symbols.push_back(unk_id_);
      pending_unk = true;
    }
    if (pending_unk) symbols.push_back(unk_id_);
    return symbols;
  }

  /// Applies the merges lowest rank first, the leftmost first among equal ranks.
  void merge(std::vector<int>& symbols) const {
    const int n = static_cast<int>(symbols.size());
    std::vector<int> prev(n), next(n);
    for (int i = 0; i < n; ++i) prev[i] = i - 1, next[i] = i + 1 < n ? i + 1 : -1;
    struct Candidate {
      int rank, pos, id;
      bool operator>(const Candidate& o) const {
        return rank != o.rank ? rank > o.rank : pos > o.pos;
      }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
    const auto offer = [&](int pos) {
      if (pos < 0 || next[pos] < 0) return;
      auto it = merges_.find(pair_key(symbols[pos], symbols[next[pos]]));
      if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.id});
    };
    for (int i = 0; i + 1 < n; ++i) offer(i);
    while (!queue.empty()) {
      const Candidate top = queue.top();
      queue.pop();
      if (symbols[top.pos] < 0 || next[top.pos] < 0) continue;
      const int right = next[top.pos];
      auto it = merges_.find(pair_key(symbols[top.pos], symbols[right]));
      if (it == merges_.end() || it->second.id != top.id || it->second.rank != top.rank) continue;
      symbols[top.pos] = top.id;
      symbols[right] = -1;
      next[top.pos] = next[right];
      if (next[right] >= 0) prev[next[right]] = top.pos;
      offer(prev[top.pos]);
      offer(top.pos);
    }
  }

  std::unordered_map<std::string, int> vocab_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::string prefix_, suffix_;
  bool fuse_unk_, byte_fallback_, ignore_merges_;
  int unk_id_ = -1;
  std::array<int, 256> byte_ids_{};  ///< byte_fallback: the id of <0xXX>, -1 if none
};

/// WordPiece: the longest vocabulary prefix of a word first, then of the rest with the
/// continuing_subword_prefix ("##"); a word with a part not found, or longer than
/// max_input_chars_per_word characters, is the unk token alone.
class WordPieceModel : public Model {
 public:
  explicit WordPieceModel(const JsonAt& json)
      : vocab_(read_vocab(json.at("vocab"))),
        prefix_(json.str_or("continuing_subword_prefix", "##")),
        max_chars_(json.int_or("max_input_chars_per_word", 100)) {
    unk_id_ = token_id(json, "unk_token", vocab_);
    if (unk_id_ < 0) json.at("unk_token").fail("is null; WordPiece needs an unk token");
  }

  void tokenize(std::string_view word, std::vector<int>& ids) const override {
    int64_t chars = 0;
    for (char c : word) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (chars > max_chars_) {
      ids.push_back(unk_id_);
      return;
    }
    const size_t first = ids.size();
    std::string key;
    for (size_t start = 0; start < word.size();) {
      size_t end = word.size();
      int found = -1;
      while (end > start) {
        key.assign(start > 0 ? prefix_ : std::string());
        key.append(word.substr(start, end - start));
        auto it = vocab_.find(key);
        if (it != vocab_.end()) {
          found = it->second;
          break;
        }
        do --end;
        while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
      }
      if (found < 0) {
        ids.resize(first);
        ids.push_back(unk_id_);
        return;
      }
      ids.push_back(found);
      start = end;
    }
  }
  const std::unordered_map<std::string, int>& vocab() const override { return vocab_; }
  int unk_id() const override { return unk_id_; }

 private:
  std::unordered_map<std::string, int> vocab_;
  std::string prefix_;
  int64_t max_chars_;
  int unk_id_ = -1;
};

/// WordLevel: each piece is one vocabulary token, or unk.
class WordLevelModel : public Model {
 public:
  explicit WordLevelModel(const JsonAt& json) : vocab_(read_vocab(json.at("vocab"))) {
    unk_id_ = token_id(json, "unk_token", vocab_);
  }
  void tokenize(std::string_view piece, std::vector<int>& ids) const override {
    auto it = vocab_.find(std::string(piece));
    if (it != vocab_.end()) {
      ids.push_back(it->second);
    } else if (unk_id_ >= 0) {
      ids.push_back(unk_id_);
    }
  }
  const std::unordered_map<std::string, int>& vocab() const override { return vocab_; }
  int unk_id() const override { return unk_id_; }

 private:
  std::unordered_map<std::string, int> vocab_;
  int unk_id_ = -1;
};

}  // namespace

std::unordered_map<std::string, int> read_vocab(const JsonAt& vocab) {
  if (!vocab.value().is_object()) vocab.fail("should be an object of token: id");
  std::unordered_map<std::string, int> out;
  out.reserve(vocab.value().size());
  for (const auto& [token, id] : vocab.value().items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      vocab.fail("gives token '" + token.substr(0, 80) + "' the id " + json_preview(id) +
                 "; an id is an integer from 0");
    }
    out.emplace(token, id.get<int>());
  }
  return out;
}

std::array<int, 256> byte_fallback_ids(const std::unordered_map<std::string, int>& vocab) {
  std::array<int, 256> ids{};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = vocab.find(name);
    ids[b] = it == vocab.end() ? -1 : it->second;
  }
  return ids;
}

int token_id(const JsonAt& model, const std::string& key,
             const std::unordered_map<std::string, int>& vocab) {
  auto token = model.find(key);
  if (!token) return -1;
  auto it = vocab.find(token->str());
  if (it == vocab.end()) token->fail("is '" + token->str() + "', which is not in model.vocab");
  return it->second;
}

std::unique_ptr<Model> make_model(const JsonAt& json) {
  const std::string& type = json.type();
  if (type == "BPE") return std::make_unique<BpeModel>(json);
  if (type == "WordPiece") return std::make_unique<WordPieceModel>(json);
  if (type == "WordLevel") return std::make_unique<WordLevelModel>(json);
  if (type == "Unigram") return make_unigram_model(json);
  json.unsupported("model", "BPE, Unigram, WordLevel, WordPiece");
}

}  // namespace unitrain::hf
