#pragma once
// Reading a whole data file, plain or gzip-compressed.
#include <string>

#include "unitrain/core/mapped_file.h"  // require_file

namespace unitrain {

/// The whole content of `path`, decompressed when it is gzip (detected from the bytes, not the
/// name; plain files pass through). ConfigError naming `key` and `path` when the file is missing,
/// a directory, unreadable or a corrupt/truncated gzip stream.
std::string read_file_bytes(const std::string& path, const std::string& key);

}  // namespace unitrain
