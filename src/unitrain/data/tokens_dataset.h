#pragma once
// The `tokens` dataset: flat binary files of token ids (nanoGPT's train.bin), read per window.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/core/positional_file.h"
#include "unitrain/data/dataset.h"
#include "unitrain/data/scan_limit.h"

namespace unitrain {

/// Settings of the `tokens` dataset (its `args`).
struct TokensOptions {
  std::string path;                ///< one file, or a glob of shards (sorted by name)
  std::vector<std::string> paths;  ///< shards, in this order (instead of path)
  std::string dtype = "uint16";    ///< uint16 | uint32, little-endian
  int64_t seq_len = 128;
  int64_t stride = 0;                 ///< tokens between window starts; 0 = seq_len
  std::optional<int64_t> vocab_size;  ///< unset: the largest id + 1, for files up to 64 MiB
  std::string tokenizer;              ///< the tokenizer the ids came from; "" = none named

  static void declare(Options<TokensOptions>& o);
};

/// Windows of flat files of token ids, as nanoGPT's prepare scripts write them
/// (`np.array(ids, dtype=np.uint16).tofile("train.bin")`). Each window is read (pread) when its
/// example is: files larger than memory work, a batch reads only its windows' bytes, and the
/// pages stay the kernel's cache, outside the process's RSS. With one
/// file, example i: `x` int64 [seq_len] = ids[i*stride, i*stride + seq_len) and `y` int64
/// [seq_len] = the same window shifted by one (the next token). With several files (shards)
/// windows do not cross a file's end: the examples are the first file's windows, then the
/// second's, and so on. Windows are a function of the index alone, so the loader's seeded
/// shuffle gives random windows that a resume reproduces exactly. info: vocab_size,
/// num_tokens (all files). Ids are checked against vocab_size as windows are read. ConfigError
/// naming the file when it is missing, not a whole number of ids or shorter than seq_len + 1
/// ids; when an id read is >= vocab_size (naming the token's offset too); and, without
/// vocab_size, when the files hold more than kScanLimitBytes (64 MiB).
class TokensDataset : public Dataset {
 public:
  explicit TokensDataset(const TokensOptions& options);

  int64_t size() const override { return size_; }
  Batch get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  std::map<std::string, int64_t> info() const override;

 private:
  /// One file: its descriptor, ids, and the global index of its first window.
  struct Shard {
    PositionalFile file;
    int64_t num_tokens;
    int64_t first_window;
  };
  /// Little-endian id `i` of `bytes`.
  int64_t id_at(const unsigned char* bytes, int64_t i) const;
  /// ConfigError naming the file and the offset of token `i` of `shard`, `id`, unless it is
  /// below vocab_size.
  void check_id(int64_t id, const Shard& shard, int64_t i) const;
  /// The largest id of all files (reads every token).
  int64_t largest_id() const;
  std::vector<Shard> shards_;
  int element_size_;
  int64_t num_tokens_ = 0;
  int64_t seq_len_;
  int64_t stride_;
  int64_t size_ = 0;
  int64_t vocab_size_ = 0;
  bool scanned_ = false;  ///< vocab_size_ is the files' largest id + 1
};

/// Registers dataset `tokens` (its name, help, args and factory) in dataset_registry();
/// register_builtin_datasets() calls it.
void register_tokens_dataset();

}  // namespace unitrain
