#include "unitrain/data/tokens_dataset.h"

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>

#include "unitrain/core/error.h"
#include "unitrain/data/shard_paths.h"

namespace unitrain {
void TokensOptions::declare(Options<TokensOptions>& o) {
  using T = TokensOptions;
  o.field("path", &T::path)
      .help(
          "flat binary file of token ids (e.g. nanoGPT's train.bin), read window by window; or a "
          "glob of shard files (data/train_*.bin), read in name order");
  o.field("paths", &T::paths)
      .help(
          "shard files read as one dataset, in this order (instead of path); windows do not "
          "cross a file's end");
  o.field("dtype", &T::dtype)
      .choices({"uint16", "uint32"})
      .help("the ids' type, little-endian: uint16 (vocabularies up to 65536) or uint32");
  o.field("seq_len", &T::seq_len).gt(0).help("tokens per example (x and y)");
  o.field("stride", &T::stride).min(0).help("tokens between example starts; 0 = seq_len");
  o.field("vocab_size", &T::vocab_size)
      .gt(0)
      .help(
          "ids must be below it (checked as windows are read); null = the largest id + 1, "
          "found by reading the files, which must then total at most 64 MiB");
  o.field("tokenizer", &T::tokenizer)
      .help(
          "the tokenizer the ids came from (a tokenizer.json or SentencePiece .model); not read "
          "to train: export --format hf copies its files into the folder, and generate and eval "
          "--text encode with it");
}

TokensDataset::TokensDataset(const TokensOptions& o)
    : element_size_(o.dtype == "uint32" ? 4 : 2),
      seq_len_(o.seq_len),
      stride_(o.stride == 0 ? o.seq_len : o.stride) {
  UT_CHECK(o.dtype == "uint16" || o.dtype == "uint32",
           "tokens: dtype must be uint16 or uint32, got '", o.dtype, "'");
  UT_CHECK(seq_len_ > 0 && stride_ > 0, "tokens: seq_len and stride must be positive");
  std::error_code error;
  UT_CHECK(o.tokenizer.empty() || std::filesystem::is_regular_file(o.tokenizer, error),
           "tokens: tokenizer '", o.tokenizer, "' is not a file");
  for (const std::string& path : shard_paths(o.path, o.paths, "tokens")) {
    PositionalFile file(path, "tokens");
    const size_t bytes = file.size();
    // Raw files carry no dtype: a byte count that is no multiple of the id's size is the one
    // sign of a file written with another.
    UT_CHECK(bytes % element_size_ == 0, "tokens: '", path, "' has ", bytes,
             " bytes, not a whole number of ", o.dtype, " ids (", element_size_,
             " bytes each): truncated, or another dtype (data.*.args.dtype)?");
    const int64_t ids = static_cast<int64_t>(bytes) / element_size_;
    UT_CHECK(ids >= seq_len_ + 1, "tokens: '", path, "' holds ", ids,
             " ids; one example needs seq_len + 1 = ", seq_len_ + 1);
    shards_.push_back({std::move(file), ids, size_});
    num_tokens_ += ids;
    size_ += (ids - 1 - seq_len_) / stride_ + 1;
  }
  if (o.vocab_size) {
    vocab_size_ = *o.vocab_size;
    return;
  }
  const int64_t bytes = num_tokens_ * element_size_;
  UT_CHECK(bytes <= kScanLimitBytes, "tokens: data.*.args.vocab_size is not set and '",
           shards_.front().file.path(), "'", shards_.size() > 1 ? " and the other shards" : "",
           " hold ", bytes,
           " bytes, more than the 64 MiB read to find the largest id: set vocab_size to the "
           "tokenizer's (e.g. 50257 for GPT-2's, the model's vocabulary follows it)");
  vocab_size_ = largest_id() + 1;
  scanned_ = true;
}

int64_t TokensDataset::largest_id() const {
  constexpr int64_t kChunk = int64_t(1) << 20;  // ids read at a time
  std::vector<unsigned char> bytes(static_cast<size_t>(kChunk * element_size_));
  int64_t largest = 0;
  for (const Shard& s : shards_) {
    for (int64_t start = 0; start < s.num_tokens; start += kChunk) {
      const int64_t n = std::min(kChunk, s.num_tokens - start);
      s.file.read(static_cast<uint64_t>(start * element_size_),
                  static_cast<size_t>(n * element_size_), bytes.data());
      for (int64_t i = 0; i < n; ++i) largest = std::max(largest, id_at(bytes.data(), i));
    }
  }
  return largest;
}

int64_t TokensDataset::id_at(const unsigned char* bytes, int64_t i) const {
  const unsigned char* p = bytes + i * element_size_;
  if (element_size_ == 2) return static_cast<int64_t>(p[0] | (p[1] << 8));
  return static_cast<int64_t>(static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                              (static_cast<uint32_t>(p[2]) << 16) |
                              (static_cast<uint32_t>(p[3]) << 24));
}

void TokensDataset::check_id(int64_t id, const Shard& shard, int64_t i) const {
  UT_CHECK(id < vocab_size_, "tokens: '", shard.file.path(), "' holds id ", id, " at token ", i,
           " (byte ", i * element_size_, "), not below vocab_size ", vocab_size_,
           " (raise data.*.args.vocab_size, or check data.*.args.dtype)");
}

Batch TokensDataset::get(int64_t index) const {
  Batch b = get_batch({index});
  return {{"x", b.at("x")[0]}, {"y", b.at("y")[0]}};
}

Batch TokensDataset::get_batch(const std::vector<int64_t>& indices) const {
  const auto n = static_cast<int64_t>(indices.size());
  torch::Tensor x = torch::empty({n, seq_len_}, torch::kInt64);
  torch::Tensor y = torch::empty({n, seq_len_}, torch::kInt64);
  int64_t* xp = x.data_ptr<int64_t>();
  int64_t* yp = y.data_ptr<int64_t>();
  std::vector<unsigned char> window(static_cast<size_t>((seq_len_ + 1) * element_size_));
  for (int64_t r = 0; r < n; ++r) {
    const int64_t i = indices[static_cast<size_t>(r)];
    UT_CHECK(i >= 0 && i < size_, "tokens: example index ", i, " is out of range [0, ", size_, ")");
    // The last shard whose first window is at or before i.
    const auto after =
        std::upper_bound(shards_.begin(), shards_.end(), i,
                         [](int64_t v, const Shard& s) { return v < s.first_window; });
    const Shard& shard = *(after - 1);
    const int64_t start = (i - shard.first_window) * stride_;
    shard.file.read(static_cast<uint64_t>(start * element_size_), window.size(), window.data());
    int64_t previous = id_at(window.data(), 0);
    check_id(previous, shard, start);
    for (int64_t t = 0; t < seq_len_; ++t) {
      const int64_t next = id_at(window.data(), t + 1);
      check_id(next, shard, start + t + 1);
      xp[r * seq_len_ + t] = previous;
      yp[r * seq_len_ + t] = next;
      previous = next;
    }
  }
  return {{"x", x}, {"y", y}};
}

std::map<std::string, int64_t> TokensDataset::info() const {
  std::map<std::string, int64_t> info{{"vocab_size", vocab_size_}, {"num_tokens", num_tokens_}};
  if (scanned_) info["max_token_id"] = vocab_size_ - 1;  // read from the files
  return info;
}

void register_tokens_dataset() {
  dataset_registry().add<TokensOptions>(
      "tokens",
      "flat files of uint16/uint32 token ids (nanoGPT's train.bin; shards by a glob or a list), "
      "read window by window: x, y int64 [seq_len], y = x shifted by one",
      [](const TokensOptions& o) -> DatasetPtr { return std::make_shared<TokensDataset>(o); });
}

}  // namespace unitrain
