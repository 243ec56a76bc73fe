// `unitrain tokenizer`: train a SentencePiece model; encode texts to ids and decode ids to texts
// with a SentencePiece .model or a Hugging Face tokenizer.json.
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "unitrain/core/error.h"
#include "unitrain/log/console.h"
#include "unitrain/text/hf_tokenizer.h"
#include "unitrain/text/tokenizer.h"
#include "unitrain/text/tokenizer_trainer.h"

namespace unitrain::cli {
namespace {

/// The ids of one line of `decode`'s input: integers parted by spaces, commas or brackets (so
/// that a JSON array reads too). ConfigError naming the line and the word that is not one.
std::vector<int> ids_of_line(const std::string& line, int64_t number) {
  std::string words = line;
  for (char& c : words) {
    if (c == ',' || c == '[' || c == ']') c = ' ';
  }
  std::istringstream in(words);
  std::vector<int> ids;
  for (std::string word; in >> word;) {
    size_t used = 0;
    long long id = 0;
    try {
      id = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || id < INT32_MIN || id > INT32_MAX) {
      throw ConfigError("tokenizer decode: line " + std::to_string(number) + ": '" + word +
                        "' is not a token id");
    }
    ids.push_back(static_cast<int>(id));
  }
  return ids;
}

/// Calls `each(line, number)` for `given` when the option was given, else for each line of
/// stdin (a CRLF's '\r' dropped).
template <typename F>
void for_each_input(const CLI::Option* option, const std::string& given, F each) {
  if (option->count() > 0) {
    each(given, 1);
    return;
  }
  int64_t number = 0;
  for (std::string line; std::getline(std::cin, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    each(line, ++number);
  }
}

/// The text of one line of `encode --jsonl`'s input: a JSON object's "text". ConfigError naming
/// the line when it is not one.
std::string text_of_json_line(const std::string& line, int64_t number) {
  const std::string where = "tokenizer encode --jsonl: stdin line " + std::to_string(number);
  nlohmann::json object;
  try {
    object = nlohmann::json::parse(line);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(where + " is not JSON (at byte " + std::to_string(e.byte) +
                      "); give one object a line, {\"text\": \"...\"}");
  }
  if (!object.is_object()) throw ConfigError(where + " is not a JSON object");
  const auto text = object.find("text");
  if (text == object.end()) throw ConfigError(where + " has no key 'text'");
  if (!text->is_string()) throw ConfigError(where + ": 'text' is not a string");
  return text->get<std::string>();
}

class TokenizerCommand : public Subcommand {
 public:
  explicit TokenizerCommand(CLI::App& app)
      : Subcommand(
            app, "tokenizer",
            "train a SentencePiece tokenizer for the text dataset, or encode and decode "
            "with one or a Hugging Face tokenizer.json: train --input FILE --vocab-size N "
            "[--out PREFIX] | encode --tokenizer PATH [--text TEXT | --jsonl] [--json] | decode "
            "--tokenizer PATH [--ids IDS]") {
    action_ = cli_->add_option("action", action_name_, "train, encode or decode")->required();
    train_only_.push_back(
        cli_->add_option("--input", options_.inputs,
                         "train: a text file (.gz too): one text a line, or JSON Lines; "
                         "repeatable")
            ->allow_extra_args(false));
    train_only_.push_back(
        cli_->add_option("--vocab-size", options_.vocab_size,
                         "train: pieces in the model, <unk> <s> </s> <pad> (ids 0-3) included"));
    model_type_ =
        cli_->add_option("--model-type", options_.model_type, "train: unigram, bpe, char or word")
            ->capture_default_str();
    train_only_.push_back(model_type_);
    train_only_.push_back(
        cli_->add_option("--out", options_.out, "train: writes OUT.model and OUT.vocab")
            ->capture_default_str());
    add_text_options();
    train_only_.push_back(
        cli_->add_flag("--force", options_.force, "train: replace an existing OUT.model/.vocab"));
    add_codec_options();
  }
  Choices choices() const override {
    std::vector<std::string> formats;
    for (const auto& [name, value] : kTextFormatNames) formats.push_back(name);
    return {{action_, {"train", "encode", "decode"}},
            {model_type_, kTokenizerModelTypes},
            {format_, formats}};
  }

  int run() override {
    if (action_name_ != "train" && action_name_ != "encode" && action_name_ != "decode") {
      throw ConfigError("tokenizer: unknown action '" + action_name_ +
                        "'; use train, encode or decode");
    }
    const auto& own = action_name_ == "train" ? codec_only_ : train_only_;
    for (const CLI::Option* option : own) {
      if (option->count() > 0) {
        throw ConfigError("tokenizer " + action_name_ + ": " + option->get_name() + " is " +
                          (action_name_ == "train" ? "encode's or decode's" : "train's") +
                          " option, not " + action_name_ + "'s");
      }
    }
    if (action_name_ == "train") return train();
    if (tokenizer_path_.empty()) {
      throw ConfigError("tokenizer " + action_name_ +
                        ": give --tokenizer PATH (a SentencePiece .model or a tokenizer.json)");
    }
    const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(tokenizer_path_);
    return action_name_ == "encode" ? encode(*tokenizer) : decode(*tokenizer);
  }

 private:
  /// How train reads the input files.
  void add_text_options() {
    format_ = cli_->add_option("--format", options_.format,
                               "train: lines, jsonl, or auto (jsonl for names ending .jsonl/.json)")
                  ->transform(CLI::CheckedTransformer(std::map<std::string, TextFormat>(
                      kTextFormatNames.begin(), kTextFormatNames.end())))
                  ->default_str("auto");
    train_only_.push_back(format_);
    train_only_.push_back(
        cli_->add_option("--field", options_.field, "train: jsonl: the key holding the text")
            ->capture_default_str());
    train_only_.push_back(
        cli_->add_option("--character-coverage", options_.character_coverage,
                         "train: share of the text's characters the pieces cover (rarer ones "
                         "become <unk>); 1.0 for small alphabets")
            ->capture_default_str());
  }

  /// encode's and decode's options.
  void add_codec_options() {
    codec_only_.push_back(cli_->add_option(
        "--tokenizer", tokenizer_path_,
        "encode, decode: a SentencePiece .model or a Hugging Face tokenizer.json"));
    text_ = cli_->add_option("--text", text_value_,
                             "encode: the text (else each line of stdin is one)");
    codec_only_.push_back(text_);
    ids_ = cli_->add_option("--ids", ids_value_,
                            "decode: ids parted by spaces or commas (else each line of stdin)");
    codec_only_.push_back(ids_);
    codec_only_.push_back(cli_->add_flag(
        "--json", json_, "encode: one JSON object a text: {\"ids\": [...], \"tokens\": [...]}"));
    codec_only_.push_back(cli_->add_flag(
        "--jsonl", jsonl_,
        "encode: stdin is JSON Lines, a text in each object's \"text\" (it may hold newlines); "
        "writes {\"ids\": [...]} a line (with \"tokens\" under --json)"));
    codec_only_.push_back(cli_->add_flag(
        "--no-special-tokens", no_special_,
        "encode: without the special tokens a tokenizer.json's post_processor adds (bos, "
        "[CLS]...)"));
    codec_only_.push_back(cli_->add_flag(
        "--skip-special-tokens", skip_special_,
        "decode: leave out a tokenizer.json's special tokens (SentencePiece always does)"));
  }

  int train() {
    if (options_.inputs.empty()) throw ConfigError("tokenizer train: give --input FILE");
    if (options_.vocab_size == 0) throw ConfigError("tokenizer train: give --vocab-size N");
    const std::string model = train_tokenizer(options_);
    log::info("wrote " + model + " and " + options_.out +
              ".vocab; use it with data.<split>.args.tokenizer: " + model);
    return 0;
  }

  /// One line of ids (or a JSON object) a text.
  int encode(const Tokenizer& tokenizer) {
    if (jsonl_ && text_->count() > 0) {
      throw ConfigError("tokenizer encode: --jsonl reads the texts from stdin; leave out --text");
    }
    for_each_input(text_, text_value_, [&](const std::string& line, int64_t number) {
      if (jsonl_ && line.find_first_not_of(" \t") == std::string::npos) return;
      const std::string text = jsonl_ ? text_of_json_line(line, number) : line;
      std::vector<int> ids;
      if (!no_special_) ids = tokenizer.special_prefix();
      const std::vector<int> body = tokenizer.encode(text);
      ids.insert(ids.end(), body.begin(), body.end());
      if (!no_special_) {
        ids.insert(ids.end(), tokenizer.special_suffix().begin(), tokenizer.special_suffix().end());
      }
      if (json_ || jsonl_) {
        nlohmann::json out = {{"ids", ids}};
        if (json_) {
          nlohmann::json& tokens = out["tokens"] = nlohmann::json::array();
          for (int id : ids) tokens.push_back(tokenizer.id_to_token(id));
        }
        std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
      } else {
        for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
        std::cout << '\n';
      }
    });
    return 0;
  }

  /// One text a line of ids.
  int decode(const Tokenizer& tokenizer) {
    const auto* hf = dynamic_cast<const HfTokenizer*>(&tokenizer);
    for_each_input(ids_, ids_value_, [&](const std::string& line, int64_t number) {
      const std::vector<int> ids = ids_of_line(line, number);
      std::cout << (hf ? hf->decode(ids, skip_special_) : tokenizer.decode(ids)) << '\n';
    });
    return 0;
  }

  TokenizerTrainOptions options_;
  std::string action_name_, tokenizer_path_, text_value_, ids_value_;
  bool json_ = false, jsonl_ = false, no_special_ = false, skip_special_ = false;
  CLI::Option* action_;
  CLI::Option* model_type_;
  CLI::Option* format_;
  CLI::Option* text_;
  CLI::Option* ids_;
  std::vector<const CLI::Option*> train_only_, codec_only_;
};

}  // namespace

const CommandFactory make_tokenizer_command = make_command<TokenizerCommand>;

}  // namespace unitrain::cli
