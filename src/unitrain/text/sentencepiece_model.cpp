#include "unitrain/text/sentencepiece_model.h"

#include <dlfcn.h>

#include <filesystem>

#include "unitrain/core/error.h"
#include "unitrain/core/file_bytes.h"
#include "unitrain/text/sentencepiece_module.h"

namespace unitrain {
namespace {

/// libunitrain_sentencepiece.so, opened once from the folder of the library holding this code
/// (the build folder, or lib/ of an installed tree). RTLD_DEEPBIND: libsentencepiece binds its
/// own protobuf symbols before the process's libprotobuf (sentencepiece_module.h).
const sentencepiece_module::Module& loaded_module() {
  static const sentencepiece_module::Module* module = [] {
    Dl_info self{};
    UT_CHECK(dladdr(reinterpret_cast<void*>(&loaded_module), &self) != 0 && self.dli_fname,
             "SentencePiece: cannot find the folder of libunitrain");
    const std::string path =
        (std::filesystem::path(self.dli_fname).parent_path() / sentencepiece_module::kFileName)
            .string();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (handle == nullptr) {
      throw ConfigError(detail::concat("SentencePiece: cannot load '", path, "': ", dlerror(),
                                       " (it is built and installed with libunitrain; "
                                       "Debian's libsentencepiece0 must be installed)"));
    }
    auto entry = reinterpret_cast<sentencepiece_module::EntryPoint>(
        dlsym(handle, sentencepiece_module::kEntryPoint));
    UT_CHECK(entry != nullptr, "SentencePiece: '", path, "' has no ",
             sentencepiece_module::kEntryPoint, ": it is from another unitrain version");
    return entry();
  }();
  return *module;
}

/// The trainer's sentences from a callback.
class CallbackSentences : public sentencepiece_module::Sentences {
 public:
  explicit CallbackSentences(const std::function<bool(std::string&)>& next) : next_(next) {}
  bool next(std::string& out) override { return next_(out); }

 private:
  const std::function<bool(std::string&)>& next_;
};

}  // namespace

SentencePieceModel::SentencePieceModel(const std::string& path) : path_(path) {
  const std::string bytes = read_file_bytes(path, "tokenizer");
  std::string error;
  processor_ = loaded_module().load(bytes, error);
  UT_CHECK(processor_ != nullptr, "tokenizer: '", path,
           "' is not a SentencePiece model (a .model file from unitrain tokenizer train or "
           "spm_train; SentencePiece says: ",
           error, ")");
  vocab_size_ = processor_->piece_size();
  bos_id_ = processor_->bos_id();
  eos_id_ = processor_->eos_id();
  pad_id_ = processor_->pad_id();
  unk_id_ = processor_->unk_id();
}

SentencePieceModel::~SentencePieceModel() = default;

std::vector<int> SentencePieceModel::encode(std::string_view text) const {
  std::vector<int> ids;
  std::string error;
  UT_CHECK_TRAIN(processor_->encode(text, ids, error), "tokenizer '", path_,
                 "': SentencePiece cannot encode a text: ", error);
  return ids;
}

std::string SentencePieceModel::decode(const std::vector<int>& ids) const {
  for (int id : ids) {
    UT_CHECK(id >= 0 && id < vocab_size_, "tokenizer '", path_, "': id ", id,
             " is out of range [0, ", vocab_size_, ")");
  }
  std::string text, error;
  UT_CHECK_TRAIN(processor_->decode(ids, text, error), "tokenizer '", path_,
                 "': SentencePiece cannot decode the ids: ", error);
  return text;
}

std::string SentencePieceModel::id_to_token(int64_t id) const {
  UT_CHECK(id >= 0 && id < vocab_size_, "tokenizer '", path_, "': id ", id, " is out of range [0, ",
           vocab_size_, ")");
  return processor_->id_to_piece(static_cast<int>(id));
}

void train_sentencepiece(const std::map<std::string, std::string>& args,
                         const std::function<bool(std::string&)>& next) {
  CallbackSentences sentences(next);
  std::string error;
  UT_CHECK_TRAIN(loaded_module().train(args, sentences, error), "SentencePiece: ", error);
}

}  // namespace unitrain
