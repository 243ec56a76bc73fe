#include "unitrain/data/file_bytes.h"

#include <zlib.h>

#include <filesystem>
#include <memory>

#include "unitrain/core/error.h"

namespace unitrain {

void require_file(const std::string& path, const std::string& key) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    // Paths in a config are read as given: relative ones from the current directory (where
    // unitrain runs), not from the YAML file's folder. Say so, since that is the usual surprise.
    const std::string where =
        fs::path(path).is_relative()
            ? detail::concat(" (a relative path is read from the current directory, ",
                             fs::current_path(ec).string(),
                             ", not from the config file's folder; give an absolute path or run "
                             "from the folder it is relative to)")
            : "";
    throw ConfigError(detail::concat(key, ": file '", path, "' does not exist", where));
  }
  UT_CHECK(!fs::is_directory(path, ec), key, ": '", path, "' is a directory, not a file");
}

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
