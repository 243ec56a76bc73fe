#pragma once
// The seam between libunitrain and libunitrain_sentencepiece.so, the module that holds Debian's
// libsentencepiece. Only standard types cross it: no SentencePiece, protobuf or LibTorch header.
//
// Why a module: libsentencepiece.so carries its own protobuf-lite (3.14) and exports its
// google::protobuf symbols, while LibTorch and the tensorboard tracker load libprotobuf.so.32
// (3.21). Linked into one process, each resolves the other's symbols and the first model loaded
// aborts in protobuf's version check. libunitrain opens the module with RTLD_DEEPBIND, so that
// libsentencepiece binds its own protobuf first (sentencepiece_model.cpp).
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace unitrain::sentencepiece_module {

/// A loaded model (sentencepiece::SentencePieceProcessor). encode() is const and safe to call
/// from several threads at once: SentencePiece's Encode keeps no mutable state (its authors'
/// answer in google/sentencepiece#207 and #657; its own Python batch API encodes on several
/// threads with one processor since 0.1.97). Ids are -1 when the model has no such piece.
class Processor {
 public:
  virtual ~Processor() = default;
  /// The ids of `text`; false with `error` set when SentencePiece refuses.
  virtual bool encode(std::string_view text, std::vector<int>& ids, std::string& error) const = 0;
  /// The text of `ids`; false with `error` set when SentencePiece refuses (an id out of range).
  virtual bool decode(const std::vector<int>& ids, std::string& text, std::string& error) const = 0;
  /// The piece of `id` (0 <= id < piece_size()).
  virtual std::string id_to_piece(int id) const = 0;
  virtual int piece_size() const = 0;
  virtual int bos_id() const = 0;
  virtual int eos_id() const = 0;
  virtual int pad_id() const = 0;
  virtual int unk_id() const = 0;
};

/// Training sentences handed to the trainer one at a time. next() must not throw (it runs
/// inside SentencePiece's code).
class Sentences {
 public:
  virtual ~Sentences() = default;
  /// The next sentence into `out`; false after the last.
  virtual bool next(std::string& out) = 0;
};

/// What the module offers. Errors are SentencePiece's own messages, never exceptions.
class Module {
 public:
  virtual ~Module() = default;
  /// A model from the bytes of a .model file; null with `error` set when they are not one.
  virtual std::unique_ptr<Processor> load(std::string_view serialized,
                                          std::string& error) const = 0;
  /// SentencePieceTrainer::Train with `args` (its flag names: model_prefix, vocab_size, ...)
  /// on `sentences`; false with `error` set when it fails.
  virtual bool train(const std::map<std::string, std::string>& args, Sentences& sentences,
                     std::string& error) const = 0;
};

/// The module's file name (beside libunitrain.so) and its one exported function, whose name
/// carries the version of this interface.
inline constexpr const char* kFileName = "libunitrain_sentencepiece.so";
inline constexpr const char* kEntryPoint = "unitrain_sentencepiece_module_v2";
using EntryPoint = const Module* (*)();

}  // namespace unitrain::sentencepiece_module
