#include "unitrain/data/tokens_dataset.h"

#include <torch/torch.h>

#include <algorithm>

#include "unitrain/core/error.h"

namespace unitrain {
void TokensOptions::declare(Options<TokensOptions>& o) {
  using T = TokensOptions;
  o.field("path", &T::path)
      .required()
      .help("flat binary file of token ids (e.g. nanoGPT's train.bin); memory-mapped");
  o.field("dtype", &T::dtype)
      .choices({"uint16", "uint32"})
      .help("the ids' type, little-endian: uint16 (vocabularies up to 65536) or uint32");
  o.field("seq_len", &T::seq_len).gt(0).help("tokens per example (x and y)");
  o.field("stride", &T::stride).min(0).help("tokens between example starts; 0 = seq_len");
  o.field("vocab_size", &T::vocab_size)
      .gt(0)
      .help("ids must be below it; null = the largest id in the file + 1");
}

TokensDataset::TokensDataset(const TokensOptions& o)
    : file_(o.path, "tokens"),
      data_(file_.data()),
      element_size_(o.dtype == "uint32" ? 4 : 2),
      seq_len_(o.seq_len),
      stride_(o.stride == 0 ? o.seq_len : o.stride),
      path_(o.path) {
  UT_CHECK(o.dtype == "uint16" || o.dtype == "uint32",
           "tokens: dtype must be uint16 or uint32, "
           "got '",
           o.dtype, "'");
  UT_CHECK(seq_len_ > 0 && stride_ > 0, "tokens: seq_len and stride must be positive");
  const size_t bytes = file_.size();
  UT_CHECK(bytes % element_size_ == 0, "tokens: '", o.path, "' has ", bytes,
           " bytes, not a "
           "whole number of ",
           o.dtype, " ids (", element_size_,
           " bytes each): truncated, or "
           "another dtype (data.*.args.dtype)?");
  num_tokens_ = static_cast<int64_t>(bytes) / element_size_;
  UT_CHECK(num_tokens_ >= seq_len_ + 1, "tokens: '", o.path, "' holds ", num_tokens_,
           " ids; one example needs seq_len + 1 = ", seq_len_ + 1);
  size_ = (num_tokens_ - 1 - seq_len_) / stride_ + 1;
  int64_t largest = 0;
  for (int64_t i = 0; i < num_tokens_; ++i) largest = std::max(largest, token(i));
  vocab_size_ = o.vocab_size.value_or(largest + 1);
  UT_CHECK(largest < vocab_size_, "tokens: '", o.path, "' holds id ", largest,
           ", not below vocab_size ", vocab_size_,
           " (raise data.*.args.vocab_size, or check "
           "data.*.args.dtype)");
}

int64_t TokensDataset::token(int64_t i) const {
  const unsigned char* p = data_ + i * element_size_;
  if (element_size_ == 2) return static_cast<int64_t>(p[0] | (p[1] << 8));
  return static_cast<int64_t>(static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                              (static_cast<uint32_t>(p[2]) << 16) |
                              (static_cast<uint32_t>(p[3]) << 24));
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
  for (int64_t r = 0; r < n; ++r) {
    const int64_t i = indices[static_cast<size_t>(r)];
    UT_CHECK(i >= 0 && i < size_, "tokens: example index ", i, " is out of range [0, ", size_, ")");
    const int64_t start = i * stride_;
    int64_t previous = token(start);
    for (int64_t t = 0; t < seq_len_; ++t) {
      const int64_t next = token(start + t + 1);
      xp[r * seq_len_ + t] = previous;
      yp[r * seq_len_ + t] = next;
      previous = next;
    }
  }
  return {{"x", x}, {"y", y}};
}

std::map<std::string, int64_t> TokensDataset::info() const {
  return {{"vocab_size", vocab_size_}, {"num_tokens", num_tokens_}};
}

void register_tokens_dataset() {
  dataset_registry().add<TokensOptions>(
      "tokens",
      "a flat file of uint16/uint32 token ids (nanoGPT's train.bin), memory-mapped: x, y int64 "
      "[seq_len], y = x shifted by one",
      [](const TokensOptions& o) -> DatasetPtr { return std::make_shared<TokensDataset>(o); });
}

}  // namespace unitrain
