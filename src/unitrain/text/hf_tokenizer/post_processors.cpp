// The post-processors of tokenizer.json: TemplateProcessing, BertProcessing, RobertaProcessing,
// ByteLevel (nothing to ids) and Sequence.
#include "unitrain/text/hf_tokenizer/components.h"
#include "unitrain/text/hf_tokenizer/json_at.h"

namespace unitrain::hf {
namespace {

/// A template: special tokens' ids and the places of sequence A and B.
class TemplateProcessing : public PostProcessor {
 public:
  TemplateProcessing(const JsonAt& json, int64_t vocab_size) {
    std::unordered_map<std::string, std::vector<int>> specials;
    if (auto tokens = json.find("special_tokens")) {
      if (!tokens->value().is_object()) tokens->fail("should be an object");
      for (const auto& [name, value] : tokens->value().items()) {
        const JsonAt token = tokens->member(value, name);
        std::vector<int> ids;
        for (const JsonAt& id : token.at("ids").items()) ids.push_back(id.token_id(vocab_size));
        specials[name] = ids;
      }
    }
    single_ = read_template(json.at("single"), specials, false);
    if (json.has("pair")) pair_ = read_template(json.at("pair"), specials, true);
  }

  std::vector<int> process(const std::vector<int>& first,
                           const std::vector<int>* second) const override {
    std::vector<int> out;
    const auto& items = second && !pair_.empty() ? pair_ : single_;
    for (const Item& item : items) {
      if (item.sequence == 'A') {
        out.insert(out.end(), first.begin(), first.end());
      } else if (item.sequence == 'B') {
        out.insert(out.end(), second->begin(), second->end());
      } else {
        out.insert(out.end(), item.ids.begin(), item.ids.end());
      }
    }
    if (second && pair_.empty()) out.insert(out.end(), second->begin(), second->end());
    return out;
  }

 private:
  struct Item {
    char sequence = 0;     ///< 'A', 'B', or 0 for a special token
    std::vector<int> ids;  ///< a special token's
  };

  static std::vector<Item> read_template(
      const JsonAt& json, const std::unordered_map<std::string, std::vector<int>>& specials,
      bool pair) {
    std::vector<Item> items;
    for (const JsonAt& piece : json.items()) {
      if (auto sequence = piece.find("Sequence")) {
        const std::string& id = sequence->at("id").str();
        if (id != "A" && (id != "B" || !pair)) sequence->at("id").fail("is '" + id + "'");
        items.push_back({id[0], {}});
      } else if (auto special = piece.find("SpecialToken")) {
        const std::string& id = special->at("id").str();
        auto it = specials.find(id);
        if (it == specials.end()) {
          special->at("id").fail("is '" + id + "', which post_processor.special_tokens lacks");
        }
        items.push_back({0, it->second});
      } else {
        piece.fail("should be {\"Sequence\": ...} or {\"SpecialToken\": ...}");
      }
    }
    return items;
  }

  std::vector<Item> single_, pair_;
};

/// [CLS] A [SEP] (B [SEP]); RoBERTa's <s> A </s> (</s> B </s>).
class BertProcessing : public PostProcessor {
 public:
  BertProcessing(const JsonAt& json, int64_t vocab_size, bool roberta)
      : cls_(read_token(json.at("cls"), vocab_size)),
        sep_(read_token(json.at("sep"), vocab_size)),
        roberta_(roberta) {}
  std::vector<int> process(const std::vector<int>& first,
                           const std::vector<int>* second) const override {
    std::vector<int> out{cls_};
    out.insert(out.end(), first.begin(), first.end());
    out.push_back(sep_);
    if (second) {
      if (roberta_) out.push_back(sep_);
      out.insert(out.end(), second->begin(), second->end());
      out.push_back(sep_);
    }
    return out;
  }

 private:
  static int read_token(const JsonAt& json, int64_t vocab_size) {  // ["[CLS]", 101]
    const std::vector<JsonAt> pair = json.items();
    if (pair.size() != 2) json.fail("should be [token, id]");
    return pair[1].token_id(vocab_size);
  }
  int cls_, sep_;
  bool roberta_;
};

class ByteLevelProcessing : public PostProcessor {
 public:
  std::vector<int> process(const std::vector<int>& first,
                           const std::vector<int>* second) const override {
    std::vector<int> out = first;
    if (second) out.insert(out.end(), second->begin(), second->end());
    return out;
  }
};

/// Processors in order; at most one of them adds tokens (the others are ByteLevel, which
/// changes offsets only).
class SequenceProcessing : public PostProcessor {
 public:
  SequenceProcessing(const JsonAt& json, int64_t vocab_size) {
    for (const JsonAt& item : json.at("processors").items()) {
      if (item.type() == "ByteLevel") continue;
      if (adder_) {
        item.fail("is a second post-processor that adds tokens (" + item.type() +
                  "); unitrain reads a Sequence with one");
      }
      adder_ = make_post_processor(item, vocab_size);
    }
  }
  std::vector<int> process(const std::vector<int>& first,
                           const std::vector<int>* second) const override {
    return adder_ ? adder_->process(first, second) : ByteLevelProcessing().process(first, second);
  }

 private:
  std::unique_ptr<PostProcessor> adder_;
};

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const JsonAt& json, int64_t vocab_size) {
  const std::string& type = json.type();
  if (type == "TemplateProcessing") return std::make_unique<TemplateProcessing>(json, vocab_size);
  if (type == "BertProcessing") return std::make_unique<BertProcessing>(json, vocab_size, false);
  if (type == "RobertaProcessing") return std::make_unique<BertProcessing>(json, vocab_size, true);
  if (type == "ByteLevel") return std::make_unique<ByteLevelProcessing>();
  if (type == "Sequence") return std::make_unique<SequenceProcessing>(json, vocab_size);
  json.unsupported("post_processor",
                   "BertProcessing, ByteLevel, RobertaProcessing, Sequence, TemplateProcessing");
}

}  // namespace unitrain::hf
