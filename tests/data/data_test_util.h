#pragma once
// Helpers for the data tests: a dependency-free gzip writer, and files written by Python tools.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain::test {

inline uint32_t crc32_of(const std::string& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

/// `data` as a valid gzip stream made of uncompressed ("stored") deflate blocks, so the tests
/// need no zlib of their own.
inline std::string gzip_stored(const std::string& data) {
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
  auto put32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  };
  size_t pos = 0;
  do {
    size_t len = std::min<size_t>(65535, data.size() - pos);
    bool last = pos + len == data.size();
    out.push_back(static_cast<char>(last ? 1 : 0));
    out.push_back(static_cast<char>(len & 0xFF));
    out.push_back(static_cast<char>(len >> 8));
    out.push_back(static_cast<char>(~len & 0xFF));
    out.push_back(static_cast<char>((~len >> 8) & 0xFF));
    out.append(data, pos, len);
    pos += len;
  } while (pos < data.size());
  put32(crc32_of(data));
  put32(static_cast<uint32_t>(data.size()));
  return out;
}

/// Runs `script` with Debian's /usr/bin/python3 (python3-numpy and python3-h5py, which
/// scripts/lib.sh installs), as users' files are written, with the variable `d` set to `dir`
/// and a slash (files go to d + 'name'); a test failure (never a skip) when it cannot run or
/// fails.
inline void run_python(const std::string& dir, const std::string& script) {
  const std::string path = write_file(temp_dir() + "/script.py", "d = '" + dir + "/'\n" + script);
  const std::string cmd = "/usr/bin/python3 " + path;
  EXPECT_EQ(std::system(cmd.c_str()), 0)
      << cmd << " failed:\n"
      << script << "\n(python3-numpy, python3-h5py: scripts/lib.sh installs them)";
}

}  // namespace unitrain::test
