#include "unitrain/text/tokenizer.h"

#include <fstream>

#include "unitrain/text/hf_tokenizer.h"
#include "unitrain/text/sentencepiece_model.h"

namespace unitrain {
namespace {

/// True for a name ending .json, or a file whose first non-blank byte is '{' (a SentencePiece
/// model is a protobuf, which starts with a field tag).
bool is_tokenizer_json(const std::string& path) {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) return true;
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  while (in.get(c)) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c == '{';
  }
  return false;
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  if (is_tokenizer_json(path)) return std::make_unique<HfTokenizer>(path);
  return std::make_unique<SentencePieceModel>(path);
}

}  // namespace unitrain
