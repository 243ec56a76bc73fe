// The Unigram model of tokenizer.json: the best-scoring split of a piece into vocabulary pieces
// (tokenizers/src/models/unigram/model.rs, encode_optimized and tokenize).
#include "unitrain/text/hf_tokenizer/unigram.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <limits>

#include "unitrain/core/error.h"
#include "unitrain/core/json_excerpt.h"
#include "unitrain/text/hf_tokenizer/byte_trie.h"
#include "unitrain/text/hf_tokenizer/json_at.h"
#include "unitrain/text/hf_tokenizer/models.h"
#include "unitrain/text/hf_tokenizer/unicode_text.h"

namespace unitrain::hf {
namespace {

/// How far below the lowest piece an unknown character scores (Hugging Face's K_UNK_PENALTY).
constexpr double kUnknownPenalty = 10.0;

class UnigramModel : public Model {
 public:
  explicit UnigramModel(const JsonAt& json)
      : file_(json.file()), byte_fallback_(json.bool_or("byte_fallback", false)) {
    read_pieces(json.at("vocab"));
    if (auto unk = json.find("unk_id")) {
      unk_id_ = unk->id_below(static_cast<int64_t>(scores_.size()),
                              "the pieces of model.vocab: " + std::to_string(scores_.size()));
    }
    byte_ids_ = byte_fallback_ids(vocab_);
  }

  void tokenize(std::string_view piece, std::vector<int>& ids) const override {
    std::vector<Span> spans = best_split(piece);
    for (const Span& span : spans) {
      const std::string_view text = piece.substr(span.begin, span.end - span.begin);
      if (span.id != unk_id_) {
        ids.push_back(span.id);
        continue;
      }
      // An unk span (unknown characters fused) that is a piece after all is that piece, as
      // Hugging Face looks each span up by its text.
      auto it = vocab_.find(std::string(text));
      if (it != vocab_.end()) {
        ids.push_back(it->second);
      } else if (byte_fallback_ && all_bytes_known(text)) {
        for (char b : text) ids.push_back(byte_ids_[static_cast<unsigned char>(b)]);
      } else {
        ids.push_back(unk_id_);
      }
    }
  }
  const std::unordered_map<std::string, int>& vocab() const override { return vocab_; }
  int unk_id() const override { return unk_id_; }

 private:
  struct Span {
    size_t begin, end;
    int id;
  };

  void read_pieces(const JsonAt& list) {
    const std::vector<JsonAt> items = list.items();
    if (items.empty()) list.fail("is empty; a Unigram model needs its pieces");
    if (items.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
      list.fail("has " + std::to_string(items.size()) + " pieces; ids stop at 2^31");
    }
    std::vector<std::string_view> pieces;
    pieces.reserve(items.size());
    scores_.reserve(items.size());
    vocab_.reserve(items.size());
    for (const JsonAt& item : items) {
      const nlohmann::json& v = item.value();
      if (!v.is_array() || v.size() != 2 || !v[0].is_string() || !v[1].is_number() ||
          !std::isfinite(v[1].get<double>())) {
        item.fail("is " + json_preview(v) + "; a Unigram piece is [text, finite score]");
      }
      const std::string& text = v[0].get_ref<const std::string&>();
      const int id = static_cast<int>(scores_.size());
      vocab_[text] = id;  // of equal pieces, the last (as Hugging Face's token_to_ids)
      scores_.push_back(v[1].get<double>());
      pieces.push_back(text);
      min_score_ = std::min(min_score_, scores_.back());
    }
    trie_ = std::make_unique<ByteTrie>(pieces);
    // The trie finds the first of equal pieces; Hugging Face scores the last.
    trie_ids_.resize(pieces.size());
    for (size_t i = 0; i < pieces.size(); ++i) trie_ids_[i] = vocab_.at(std::string(pieces[i]));
  }

  /// The highest-scoring split of `piece` into pieces and unknown characters, unknown characters
  /// in a row one span (Hugging Face's encode_optimized: ties keep the split found first).
  std::vector<Span> best_split(std::string_view piece) const {
    struct Best {
      double score = 0;
      int64_t start = -1;  ///< where the last span of the best split ending here starts
      int id = 0;
    };
    std::vector<Best> best(piece.size() + 1);
    const double unk_score = min_score_ - kUnknownPenalty;
    const auto offer = [&best](size_t start, size_t end, double score, int id) {
      Best& b = best[end];
      if (b.start < 0 || score > b.score) b = {score, static_cast<int64_t>(start), id};
    };
    for (size_t start = 0; start < piece.size();) {
      const double here = best[start].score;
      const size_t char_length =
          std::min(utf8_length(static_cast<unsigned char>(piece[start])), piece.size() - start);
      bool covered = false;
      trie_->each_at(piece, start, [&](ByteTrie::Match m) {
        const int id = trie_ids_[m.index];
        offer(start, start + m.length, scores_[id] + here, id);
        covered = covered || m.length == char_length;
      });
      if (!covered) {
        Best& b = best[start + char_length];
        if (b.start < 0 || unk_score + here > b.score) {
          if (unk_id_ < 0) {
            throw TrainError("tokenizer '" + file_ + "': the text has '" +
                             text_excerpt(piece.substr(start, char_length), 16) +
                             "', which no piece of the Unigram model covers, and model.unk_id "
                             "is null");
          }
          b = {unk_score + here, static_cast<int64_t>(start), unk_id_};
        }
      }
      start += char_length;
    }
    std::vector<Span> spans;
    for (size_t end = piece.size(); end > 0;) {
      const Best& b = best[end];
      const size_t start = static_cast<size_t>(b.start);
      if (b.id == unk_id_ && !spans.empty() && spans.back().id == unk_id_) {
        spans.back().begin = start;  // fused with the unk after it
      } else {
        spans.push_back({start, end, b.id});
      }
      end = start;
    }
    return {spans.rbegin(), spans.rend()};
  }

  bool all_bytes_known(std::string_view text) const {
    for (char b : text) {
      if (byte_ids_[static_cast<unsigned char>(b)] < 0) return false;
    }
    return true;
  }

  std::string file_;
  bool byte_fallback_;
  std::unordered_map<std::string, int> vocab_;
  std::vector<double> scores_;  ///< id -> score
  double min_score_ = std::numeric_limits<double>::infinity();
  std::unique_ptr<ByteTrie> trie_;
  std::vector<int> trie_ids_;  ///< the trie's index of a piece -> its id
  int unk_id_ = -1;
  std::array<int, 256> byte_ids_{};  ///< byte_fallback: the id of <0xXX>, -1 if none
};

}  // namespace

std::unique_ptr<Model> make_unigram_model(const JsonAt& json) {
  return std::make_unique<UnigramModel>(json);
}

}  // namespace unitrain::hf
