#include "unitrain/core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

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

MappedFile::MappedFile(const std::string& path, const std::string& key, Access access)
    : path_(path) {
  require_file(path, key);
  const int fd = ::open(path.c_str(), O_RDONLY);
  UT_CHECK(fd >= 0, key, ": cannot open '", path, "': ", std::strerror(errno));
  struct stat st {};
  const int rc = ::fstat(fd, &st);
  const int err = errno;
  if (rc != 0) ::close(fd);
  UT_CHECK(rc == 0, key, ": cannot stat '", path, "': ", std::strerror(err));
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) {
    ::close(fd);
    return;
  }
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
  const int map_err = errno;
  ::close(fd);  // the mapping keeps the file
  UT_CHECK(p != MAP_FAILED, key, ": cannot map '", path, "': ", std::strerror(map_err));
  ::madvise(p, size_, access == Access::Random ? MADV_RANDOM : MADV_SEQUENTIAL);
  const size_t bytes = size_;
  mapping_ = std::shared_ptr<const void>(
      p, [bytes](const void* q) { ::munmap(const_cast<void*>(q), bytes); });
  data_ = static_cast<const unsigned char*>(p);
}

}  // namespace unitrain
