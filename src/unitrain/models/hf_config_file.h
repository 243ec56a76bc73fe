#pragma once
// What the config.json readers of the Hugging Face families share (gpt2_config.cpp,
// llama_config.cpp): the file read and checked before anything of its sizes is allocated, key by
// key (a value of the wrong type or out of range refused naming the file and the key; a key whose
// math the model does not compute refused by name; a key no reader knows named in a warning).
// Private to the models room.
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace unitrain::models {

/// Sizes no model has (the largest hub models stay far below them): a config.json beyond one
/// is damaged, and is refused before anything of its size is allocated or looped over.
inline constexpr int64_t kMaxVocab = int64_t(1) << 24;
inline constexpr int64_t kMaxWidth = int64_t(1) << 18;  ///< n_embd, hidden_size, head_dim
inline constexpr int64_t kMaxInner = int64_t(1) << 20;  ///< n_inner, intermediate_size
inline constexpr int64_t kMaxLayers = int64_t(1) << 14;
inline constexpr int64_t kMaxHeads = int64_t(1) << 14;
inline constexpr int64_t kMaxPositions = int64_t(1) << 26;
inline constexpr int64_t kMaxTokenId = (int64_t(1) << 31) - 1;
/// A config.json is a few kilobytes; a generation_config.json too.
inline constexpr uintmax_t kMaxJsonBytes = uintmax_t(64) << 20;

/// The JSON object of file `path` (a config.json or generation_config.json), or ConfigError
/// naming it: missing, too large, not JSON or not an object; its text in `text_out`.
nlohmann::json read_json_object(const std::string& path, std::string* text_out);

/// A token id or a list of them (Llama 3's eos_token_id) at `where`, each in [0, `vocab`).
std::vector<int64_t> token_ids(const nlohmann::json& v, const std::string& where, int64_t vocab);

/// A config.json's object and where it came from, read key by key:
///   ConfigFile f(path, "llama");  // ConfigError unless its model_type is llama
///   f.integer("vocab_size", c.vocab_size, 1, kMaxVocab);
///   f.refuse_unless("pretraining_tp", 1, "llama computes its products whole");
///   f.harmless_common();
///   f.warn_unknown("llama");
class ConfigFile {
 public:
  /// ConfigError naming the file unless it holds `model_type`'s config.
  ConfigFile(const std::string& path, const char* model_type);

  const std::string& text() const { return text_; }
  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  /// Whether `key` is given as null.
  bool null(const char* key) const { return j_.contains(key) && j_.at(key).is_null(); }
  /// Whether a reader took `key` already (read, refused, or said harmless).
  bool taken(const char* key) const { return seen_.count(key) > 0; }
  const nlohmann::json& at(const char* key) const { return j_.at(key); }

  /// Whether `key` holds a value; a null one is refused unless `nullable` (then: not given).
  bool given(const char* key, bool nullable = false);
  void integer(const char* key, int64_t& out, int64_t min, int64_t max, bool nullable = false);
  /// A number in [min, max], or in (min, max] with `above_min`.
  void number(const char* key, double& out, double min, double max, bool above_min = false);
  void boolean(const char* key, bool& out);
  void text(const char* key, std::string& out);
  /// An id or a list of ids (Llama 3's eos_token_id), each in [0, vocab); null = none.
  void ids(const char* key, std::vector<int64_t>& out, int64_t vocab);
  /// A key the model does not compute unless it has `harmless` (a JSON value): refused by name.
  void refuse_unless(const char* key, const nlohmann::json& harmless, const std::string& why);
  /// Keys that change nothing the model computes (bookkeeping, generation, other heads).
  void harmless(std::initializer_list<const char*> keys);
  /// The keys every Hugging Face config may hold that change no math of a causal LM's forward.
  void harmless_common();
  /// Warns of every key not read, refused or named harmless.
  void warn_unknown(const char* model) const;
  std::string where(const char* key) const;

 private:
  std::string path_, text_;
  nlohmann::json j_;
  std::set<std::string> seen_;
};

}  // namespace unitrain::models
