#pragma once
// PositionalFile: a file opened read-only and read at offsets (pread), never mapped.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace unitrain {

/// A whole file read at byte offsets by pread, safe from many threads at once. Unlike
/// MappedFile, the pages read stay the kernel's page cache and are not mapped into the process:
/// random reads over a file larger than memory do not grow the process's RSS (a mapping would
/// add each touched page, or a whole large folio of up to 2 MB on recent kernels). Copies share
/// the descriptor, closed when the last copy goes.
class PositionalFile {
 public:
  /// Opens `path`. ConfigError naming `key` and the path when it does not exist (saying where a
  /// relative path is read from), is a directory, or cannot be opened.
  PositionalFile(const std::string& path, const std::string& key);

  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  /// Copies bytes [offset, offset + count) into `out`; TrainError naming the file when they
  /// cannot be read (an I/O error, or a file that shrank).
  void read(uint64_t offset, size_t count, unsigned char* out) const;

 private:
  std::shared_ptr<const int> fd_;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace unitrain
