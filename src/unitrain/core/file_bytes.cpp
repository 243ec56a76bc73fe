#include "unitrain/core/file_bytes.h"

#include <zlib.h>

#include <memory>

#include "unitrain/core/error.h"

namespace unitrain {

std::string read_file_bytes(const std::string& path, const std::string& key) {
  require_file(path, key);
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), &gzclose);
  UT_CHECK(file != nullptr, key, ": cannot open '", path, "'");
  gzbuffer(file.get(), 1 << 20);
  std::string out;
  constexpr unsigned kChunk = 1 << 20;
  while (true) {
    size_t old_size = out.size();
    out.resize(old_size + kChunk);
    int got = gzread(file.get(), &out[old_size], kChunk);
    if (got < 0) {
      int err = Z_OK;
      const char* message = gzerror(file.get(), &err);
      throw ConfigError(detail::concat(key, ": cannot read '", path, "': ", message));
    }
    out.resize(old_size + static_cast<size_t>(got));
    if (got == 0) break;
  }
  int err = Z_OK;
  const char* message = gzerror(file.get(), &err);
  UT_CHECK(err == Z_OK || err == Z_STREAM_END, key, ": '", path,
           "' is a corrupt or truncated gzip file: ", message);
  return out;
}

}  // namespace unitrain
