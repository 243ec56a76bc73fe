#include "unitrain/core/positional_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "unitrain/core/error.h"
#include "unitrain/core/mapped_file.h"  // require_file

namespace unitrain {

PositionalFile::PositionalFile(const std::string& path, const std::string& key) : path_(path) {
  require_file(path, key);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  UT_CHECK(fd >= 0, key, ": cannot open '", path, "': ", std::strerror(errno));
  fd_ = std::shared_ptr<const int>(new int(fd), [](const int* p) {
    ::close(*p);
    delete p;
  });
  struct stat st {};
  UT_CHECK(::fstat(fd, &st) == 0, key, ": cannot read the size of '", path,
           "': ", std::strerror(errno));
  size_ = static_cast<size_t>(st.st_size);
}

void PositionalFile::read(uint64_t offset, size_t count, unsigned char* out) const {
  while (count > 0) {
    const ssize_t got = ::pread(*fd_, out, count, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    UT_CHECK_TRAIN(got > 0, "cannot read ", count, " bytes of '", path_, "' at byte ", offset,
                   got == 0 ? ": the file ended (did it shrink?)" : ": ",
                   got == 0 ? "" : std::strerror(errno));
    out += got;
    offset += static_cast<uint64_t>(got);
    count -= static_cast<size_t>(got);
  }
}

}  // namespace unitrain
