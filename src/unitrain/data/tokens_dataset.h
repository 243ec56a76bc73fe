#pragma once
// The `tokens` dataset: a flat binary file of token ids (nanoGPT's train.bin), memory-mapped.
#include <cstdint>
#include <optional>
#include <string>

#include "unitrain/core/mapped_file.h"
#include "unitrain/core/options.h"
#include "unitrain/data/dataset.h"

namespace unitrain {

/// Settings of the `tokens` dataset (its `args`).
struct TokensOptions {
  std::string path;
  std::string dtype = "uint16";  ///< uint16 | uint32, little-endian
  int64_t seq_len = 128;
  int64_t stride = 0;                 ///< tokens between window starts; 0 = seq_len
  std::optional<int64_t> vocab_size;  ///< unset: the largest id in the file + 1

  static void declare(Options<TokensOptions>& o);
};

/// Windows of a flat file of token ids, as nanoGPT's prepare scripts write them
/// (`np.array(ids, dtype=np.uint16).tofile("train.bin")`). The file is memory-mapped, not read:
/// a file larger than memory works, and a batch reads only its windows' pages. Example i:
/// `x` int64 [seq_len] = ids[i*stride, i*stride + seq_len) and `y` int64 [seq_len] = the same
/// window shifted by one (the next token). Windows are a function of the index alone, so the
/// loader's seeded shuffle (a function of seed and epoch) gives random windows that a resume
/// reproduces exactly. info: vocab_size, num_tokens. ConfigError naming the file when it is
/// missing, not a whole number of ids, shorter than seq_len + 1 ids, or holds an id >=
/// vocab_size (the whole file is scanned once when built, at memory speed).
class TokensDataset : public Dataset {
 public:
  explicit TokensDataset(const TokensOptions& options);

  int64_t size() const override { return size_; }
  Batch get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  std::map<std::string, int64_t> info() const override;

 private:
  /// Token `i` of the file as an id.
  int64_t token(int64_t i) const;
  MappedFile file_;
  const unsigned char* data_;
  int element_size_;
  int64_t num_tokens_ = 0;
  int64_t seq_len_;
  int64_t stride_;
  int64_t size_ = 0;
  int64_t vocab_size_ = 0;
  std::string path_;
};

/// Registers dataset `tokens` (its name, help, args and factory) in dataset_registry();
/// register_builtin_datasets() calls it.
void register_tokens_dataset();

}  // namespace unitrain
