#include "unitrain/data/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "unitrain/core/error.h"
#include "unitrain/data/file_bytes.h"

namespace unitrain {

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
