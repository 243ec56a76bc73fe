// libunitrain_sentencepiece.so: Debian's libsentencepiece behind sentencepiece_module.h. Built
// as a module of its own (not part of libunitrain; see the header for why), with no LibTorch.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <unordered_map>

#include "unitrain/text/sentencepiece_module.h"

namespace unitrain::sentencepiece_module {
namespace {

class SentencePieceProcessorModel : public Processor {
 public:
  bool load(std::string_view serialized, std::string& error) {
    const auto status = processor_.LoadFromSerializedProto(serialized);
    if (!status.ok()) error = status.ToString();
    return status.ok();
  }

  bool encode(std::string_view text, std::vector<int>& ids, std::string& error) const override {
    const auto status = processor_.Encode(text, &ids);
    if (!status.ok()) error = status.ToString();
    return status.ok();
  }
  bool decode(const std::vector<int>& ids, std::string& text, std::string& error) const override {
    const auto status = processor_.Decode(ids, &text);
    if (!status.ok()) error = status.ToString();
    return status.ok();
  }
  std::string id_to_piece(int id) const override { return processor_.IdToPiece(id); }
  int piece_size() const override { return processor_.GetPieceSize(); }
  int bos_id() const override { return processor_.bos_id(); }
  int eos_id() const override { return processor_.eos_id(); }
  int pad_id() const override { return processor_.pad_id(); }
  int unk_id() const override { return processor_.unk_id(); }

 private:
  sentencepiece::SentencePieceProcessor processor_;
};

/// SentencePiece's iterator over our Sentences.
class SentencesIterator : public sentencepiece::SentenceIterator {
 public:
  explicit SentencesIterator(Sentences& sentences) : sentences_(sentences) { Next(); }
  bool done() const override { return done_; }
  void Next() override { done_ = !sentences_.next(current_); }
  const std::string& value() const override { return current_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  Sentences& sentences_;
  std::string current_;
  bool done_ = false;
};

class SentencePieceModule : public Module {
 public:
  std::unique_ptr<Processor> load(std::string_view serialized, std::string& error) const override {
    auto model = std::make_unique<SentencePieceProcessorModel>();
    if (!model->load(serialized, error)) return nullptr;
    return model;
  }

  bool train(const std::map<std::string, std::string>& args, Sentences& sentences,
             std::string& error) const override {
    const std::unordered_map<std::string, std::string> kwargs(args.begin(), args.end());
    SentencesIterator iterator(sentences);
    const auto status = sentencepiece::SentencePieceTrainer::Train(kwargs, &iterator);
    if (!status.ok()) error = status.ToString();
    return status.ok();
  }
};

}  // namespace
}  // namespace unitrain::sentencepiece_module

extern "C" __attribute__((visibility("default"))) const unitrain::sentencepiece_module::Module*
unitrain_sentencepiece_module_v2() {
  static const unitrain::sentencepiece_module::SentencePieceModule module;
  return &module;
}
