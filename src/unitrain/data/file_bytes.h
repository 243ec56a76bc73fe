#pragma once
// Reading a whole data file, plain or gzip-compressed.
#include <string>

namespace unitrain {

/// ConfigError naming `key` and `path` when `path` does not exist (saying where a relative path
/// is read from) or is a directory.
void require_file(const std::string& path, const std::string& key);

/// The whole content of `path`, decompressed when it is gzip (detected from the bytes, not the
/// name; plain files pass through). ConfigError naming `key` and `path` when the file is missing,
/// a directory, unreadable or a corrupt/truncated gzip stream.
std::string read_file_bytes(const std::string& path, const std::string& key);

}  // namespace unitrain
