#include "unitrain/data/text_chars_dataset.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <array>
#include <cstdio>

#include "unitrain/core/error.h"
#include "unitrain/core/file_bytes.h"

namespace unitrain {
namespace {

std::string show_char(unsigned char c) {
  char buf[32];
  if (c >= 0x20 && c < 0x7f) {
    std::snprintf(buf, sizeof(buf), "'%c' (0x%02x)", c, c);
  } else {
    std::snprintf(buf, sizeof(buf), "byte 0x%02x", c);
  }
  return buf;
}

}  // namespace

void TextCharsOptions::declare(Options<TextCharsOptions>& o) {
  using T = TextCharsOptions;
  o.field("path", &T::path)
      .required()
      .help(
          "text file (.gz is decompressed); one token per byte; relative to the current directory");
  o.field("seq_len", &T::seq_len).gt(0).help("tokens per example (x and y)");
  o.field("stride", &T::stride).min(0).help("tokens between example starts; 0 = seq_len");
  o.field("vocab", &T::vocab)
      .help("the characters in id order; null = the file's sorted distinct bytes");
}

TextCharsDataset::TextCharsDataset(const TextCharsOptions& o)
    : seq_len_(o.seq_len), stride_(o.stride == 0 ? o.seq_len : o.stride) {
  UT_CHECK(seq_len_ > 0, "text_chars: seq_len must be > 0, got ", seq_len_);
  UT_CHECK(stride_ > 0, "text_chars: stride must be >= 0, got ", o.stride);
  const std::string text = read_file_bytes(o.path, "text_chars");
  const auto n = static_cast<int64_t>(text.size());
  UT_CHECK(n >= seq_len_ + 1, "text_chars: '", o.path, "' has ", n,
           " characters; one example needs seq_len + 1 = ", seq_len_ + 1,
           " (lower seq_len or use a longer file)");

  std::array<int64_t, 256> id;
  id.fill(-1);
  if (o.vocab) {
    vocab_ = *o.vocab;
    UT_CHECK(!vocab_.empty(), "text_chars: vocab is empty");
    for (size_t i = 0; i < vocab_.size(); ++i) {
      auto c = static_cast<unsigned char>(vocab_[i]);
      UT_CHECK(id[c] < 0, "text_chars: vocab has ", show_char(c), " twice");
      id[c] = static_cast<int64_t>(i);
    }
  } else {
    std::array<bool, 256> seen{};
    for (char c : text) seen[static_cast<unsigned char>(c)] = true;
    for (int c = 0; c < 256; ++c) {
      if (seen[c]) {
        id[c] = static_cast<int64_t>(vocab_.size());
        vocab_.push_back(static_cast<char>(c));
      }
    }
  }

  tokens_ = torch::empty({n}, torch::kInt64);
  int64_t* out = tokens_.data_ptr<int64_t>();
  int64_t line = 1;
  for (int64_t i = 0; i < n; ++i) {
    auto c = static_cast<unsigned char>(text[static_cast<size_t>(i)]);
    UT_CHECK(id[c] >= 0, "text_chars: '", o.path, "' line ", line, " (byte offset ", i, ") has ",
             show_char(c), ", which is not in args.vocab");
    out[i] = id[c];
    if (c == '\n') ++line;
  }
  size_ = (n - 1 - seq_len_) / stride_ + 1;
  spdlog::info("text_chars: '{}': {} characters, vocab size {}, {} examples of {} tokens", o.path,
               n, vocab_.size(), size_, seq_len_);
}

std::map<std::string, int64_t> TextCharsDataset::info() const {
  return {{"vocab_size", vocab_size()}, {"num_tokens", tokens_.size(0)}};
}

Batch TextCharsDataset::get(int64_t index) const {
  UT_CHECK(index >= 0 && index < size_, "text_chars: example index ", index,
           " is out of range [0, ", size_, ")");
  const int64_t start = index * stride_;
  return {{"x", tokens_.slice(0, start, start + seq_len_)},
          {"y", tokens_.slice(0, start + 1, start + seq_len_ + 1)}};
}

Batch TextCharsDataset::get_batch(const std::vector<int64_t>& indices) const {
  const auto b = static_cast<int64_t>(indices.size());
  torch::Tensor starts =
      torch::from_blob(const_cast<int64_t*>(indices.data()), {b, 1}, torch::kInt64) * stride_;
  torch::Tensor positions = starts + torch::arange(seq_len_ + 1, torch::kInt64).unsqueeze(0);
  torch::Tensor windows = tokens_.index_select(0, positions.view({-1})).view({b, seq_len_ + 1});
  return {{"x", windows.slice(1, 0, seq_len_).contiguous()},
          {"y", windows.slice(1, 1, seq_len_ + 1).contiguous()}};
}

std::string TextCharsDataset::decode(const torch::Tensor& ids) const {
  torch::Tensor flat = ids.to(torch::kInt64).contiguous().view({-1});
  std::string out;
  const int64_t* p = flat.data_ptr<int64_t>();
  for (int64_t i = 0; i < flat.numel(); ++i) {
    out += (p[i] >= 0 && p[i] < vocab_size()) ? vocab_[static_cast<size_t>(p[i])] : '?';
  }
  return out;
}

void register_text_chars_dataset() {
  dataset_registry().add<TextCharsOptions>(
      "text_chars",
      "a text file as a byte-level LM stream: x, y int64 [seq_len], y = x shifted by one",
      [](const TextCharsOptions& o) -> DatasetPtr {
        return std::make_shared<TextCharsDataset>(o);
      });
}

}  // namespace unitrain
