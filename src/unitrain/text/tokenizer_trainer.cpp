#include "unitrain/text/tokenizer_trainer.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <thread>

#include "unitrain/core/error.h"
#include "unitrain/text/sentencepiece_model.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

void check_tokenizer_options(const TokenizerTrainOptions& o) {
  UT_CHECK(!o.inputs.empty(), "tokenizer train: give the text with --input FILE (repeatable)");
  UT_CHECK(o.vocab_size > kTokenizerPadId + 1, "tokenizer train: --vocab-size must be above ",
           kTokenizerPadId + 1, " (<unk>, <s>, </s> and <pad> take ids 0-3), got ", o.vocab_size);
  UT_CHECK(std::find(kTokenizerModelTypes.begin(), kTokenizerModelTypes.end(), o.model_type) !=
               kTokenizerModelTypes.end(),
           "tokenizer train: --model-type must be unigram, bpe, char or word, got '", o.model_type,
           "'");
  UT_CHECK(o.character_coverage > 0 && o.character_coverage <= 1,
           "tokenizer train: --character-coverage must be in (0, 1], got ", o.character_coverage);
  UT_CHECK(!o.out.empty(), "tokenizer train: --out must not be empty");
  for (const std::string& file : {o.out + ".model", o.out + ".vocab"}) {
    UT_CHECK(o.force || !fs::exists(file), "tokenizer train: '", file,
             "' exists; pass --force to replace it, or choose another --out");
  }
}

}  // namespace

std::string train_tokenizer(const TokenizerTrainOptions& o) {
  check_tokenizer_options(o);
  const TextLines texts(o.inputs, o.format, o.field, "tokenizer train");
  UT_CHECK(texts.size() > 0, "tokenizer train: the inputs hold no text (every line is blank)");
  spdlog::info("tokenizer train: {} texts ({} bytes) from {} file(s); a {} model of {} pieces",
               texts.size(), texts.bytes(), o.inputs.size(), o.model_type, o.vocab_size);

  const fs::path parent = fs::path(o.out).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  UT_CHECK(!ec, "tokenizer train: cannot create the folder '", parent.string(),
           "': ", ec.message());
  const std::string partial = detail::concat(o.out, ".partial-", ::getpid());
  const std::map<std::string, std::string> args = {
      {"model_prefix", partial},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"model_type", o.model_type},
      {"character_coverage", detail::concat(o.character_coverage)},
      {"unk_id", std::to_string(kTokenizerUnkId)},
      {"bos_id", std::to_string(kTokenizerBosId)},
      {"eos_id", std::to_string(kTokenizerEosId)},
      {"pad_id", std::to_string(kTokenizerPadId)},
      // SentencePiece skips texts longer than this (4192 bytes by default): keep every one.
      {"max_sentence_length", std::to_string(std::max<int64_t>(4192, texts.longest()))},
      {"num_threads", std::to_string(std::max(1u, std::thread::hardware_concurrency()))},
      {"minloglevel", "1"},  // warnings and errors only
  };
  int64_t next = 0;
  auto remove_partial = [&] {
    fs::remove(partial + ".model", ec);
    fs::remove(partial + ".vocab", ec);
  };
  try {
    train_sentencepiece(args, [&](std::string& sentence) {
      if (next == texts.size()) return false;
      sentence.assign(texts.text(next++));
      return true;
    });
    fs::rename(partial + ".vocab", o.out + ".vocab");
    fs::rename(partial + ".model", o.out + ".model");
  } catch (const fs::filesystem_error& e) {
    remove_partial();
    throw TrainError(detail::concat("tokenizer train: cannot write ", o.out, ".model: ", e.what()));
  } catch (...) {
    remove_partial();
    throw;
  }
  return o.out + ".model";
}

}  // namespace unitrain
