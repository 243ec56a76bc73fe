#pragma once
// A file's bytes as pieces of memory, written durably (fsynced; large files past the page
// cache) and checked with CRC-32s.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace unitrain {

/// The bytes of one file as pieces of memory written in order. `keep` owns what the pieces
/// point at: a buffer, or for tensor files the tensors themselves, so nothing is copied.
struct FileImage {
  struct Piece {
    const char* data;
    size_t size;
  };
  FileImage() = default;
  FileImage(std::vector<char> bytes);  // NOLINT(google-explicit-constructor): owned bytes
  std::vector<Piece> pieces;
  std::shared_ptr<const void> keep;
  std::optional<uint32_t> crc32;  ///< of all pieces in order, when already computed

  size_t size() const;
  std::vector<char> bytes() const;  ///< the pieces joined
};

/// CRC-32 (zlib's polynomial) of `size` bytes; continuing `crc` when given.
uint32_t crc32_of(const char* data, size_t size, uint32_t crc = 0);
/// The CRC-32 of A followed by B from A's and B's CRC-32s and B's size.
uint32_t crc32_combine_of(uint32_t crc_a, uint32_t crc_b, uint64_t size_b);
/// The CRC-32 of an image's pieces (its `crc32` when already computed).
uint32_t crc32_of(const FileImage& image);

/// Writes `image` to a new file at `path` and fsyncs it; TrainError naming the path on any
/// failure (a full disk shows as a short write or ENOSPC).
void write_synced(const std::string& path, const FileImage& image);
/// The bytes of the file at `path`; TrainError naming it when it is missing or unreadable.
std::vector<char> read_file(const std::string& path);
/// The CRC-32 of the file at `path`, read a few MiB at a time (a checkpoint file is checked
/// without holding it in memory); TrainError naming it when it is missing or unreadable.
uint32_t crc32_of_file(const std::string& path);

}  // namespace unitrain
