#pragma once
// A file mapped read-only into memory, shared by the readers that read files in place (datasets,
// safetensors weights).
#include <cstddef>
#include <memory>
#include <string>

namespace unitrain {

/// ConfigError naming `key` and `path` when `path` does not exist (saying where a relative path
/// is read from) or is a directory.
void require_file(const std::string& path, const std::string& key);

/// A whole file mapped read-only (mmap): its bytes are read from disk when touched, so a file
/// larger than memory can be indexed and a batch reads only its own pages. Copies share the
/// mapping, which goes when the last copy does. `data()` is null for an empty file.
class MappedFile {
 public:
  /// How the file will be read: the kernel's read-ahead follows it.
  enum class Access { Random, Sequential };

  /// Maps `path`. ConfigError naming `key` and the path when it does not exist (saying where
  /// a relative path is read from), is a directory, or cannot be opened or mapped.
  MappedFile(const std::string& path, const std::string& key, Access access = Access::Random);

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  /// True for a file small enough (64 MiB at most) to stay in the page cache once read:
  /// gathers from it are memory copies, so `data.loader.workers: auto` reads it inline.
  bool small() const { return size_ <= (size_t(64) << 20); }
  /// Keeps the mapping alive for whoever holds it (e.g. a column reading from it).
  const std::shared_ptr<const void>& keepalive() const { return mapping_; }

 private:
  std::shared_ptr<const void> mapping_;
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace unitrain
