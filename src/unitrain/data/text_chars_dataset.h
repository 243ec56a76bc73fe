#pragma once
// The `text_chars` dataset: a text file as a character-level language-modelling stream.
#include <torch/types.h>

#include <optional>
#include <string>

#include "unitrain/core/options.h"
#include "unitrain/data/dataset.h"

namespace unitrain {

/// Settings of the `text_chars` dataset (its `args`).
struct TextCharsOptions {
  std::string path;
  int64_t seq_len = 128;
  int64_t stride = 0;                ///< step between windows; 0 = seq_len (no overlap)
  std::optional<std::string> vocab;  ///< the characters, in id order; unset = the file's

  static void declare(Options<TextCharsOptions>& o);
};

/// Windows of a text file, one token per byte (so UTF-8 text is modelled byte by byte).
/// Example i: `x` int64 [seq_len] = tokens[i*stride, i*stride+seq_len) and `y` int64 [seq_len]
/// = the same window shifted by one (the next character). The vocabulary is the file's sorted
/// distinct bytes unless `vocab` is given; info: vocab_size (set a model's vocab from it) and
/// num_tokens. ConfigError naming the file when it is missing, shorter than seq_len + 1 bytes,
/// or holds a character missing from `vocab`.
class TextCharsDataset : public Dataset {
 public:
  explicit TextCharsDataset(const TextCharsOptions& options);

  int64_t size() const override { return size_; }
  Batch get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  std::map<std::string, int64_t> info() const override;
  bool in_memory() const override { return true; }

  int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }
  /// The characters in id order: token id t is vocab()[t].
  const std::string& vocab() const { return vocab_; }
  /// The text of a sequence of token ids (for samples from a model).
  std::string decode(const torch::Tensor& ids) const;

 private:
  torch::Tensor tokens_;  // int64 [num_tokens]
  std::string vocab_;
  int64_t seq_len_;
  int64_t stride_;
  int64_t size_;
};

/// Registers dataset `text_chars` (its name, help, args and factory) in dataset_registry();
/// register_builtin_datasets() calls it.
void register_text_chars_dataset();

}  // namespace unitrain
