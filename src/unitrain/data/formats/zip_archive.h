#pragma once
// Reading the zip archives NumPy writes (.npz): the directory of members, and inflating one.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace unitrain {

/// One member of a zip archive, as its central directory describes it.
struct ZipEntry {
  std::string name;
  int method = 0;  ///< 0 stored (np.savez), 8 deflate (np.savez_compressed)
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t data_offset = 0;  ///< where the member's (compressed) bytes start in the archive
};

/// The members of the zip archive held in `bytes` (`size` bytes, e.g. a mapped .npz), read
/// from the end of central directory record (ZIP64's when present), the central directory
/// (ZIP64 extra fields for sizes and offsets beyond 4 GiB) and each member's local header
/// (where its data starts). ConfigError naming `where` when it is not a zip archive, is
/// truncated, spans several disks, or a member is encrypted, compressed other than stored or
/// deflate, or runs past the end of the archive.
std::vector<ZipEntry> read_zip_directory(const unsigned char* bytes, size_t size,
                                         const std::string& where);

/// The bytes of deflate member `entry` of `archive`, inflated into memory with their CRC-32
/// checked. ConfigError naming `where` and the member when the stream is corrupt or its size or
/// CRC-32 is not the directory's.
std::shared_ptr<const std::vector<unsigned char>> inflate_zip_entry(const unsigned char* archive,
                                                                    const ZipEntry& entry,
                                                                    const std::string& where);

}  // namespace unitrain
