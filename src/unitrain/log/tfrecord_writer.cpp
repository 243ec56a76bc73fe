#include "unitrain/log/tfrecord_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "unitrain/core/error.h"
#include "unitrain/log/crc32c.h"

namespace unitrain {
namespace {

void append_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
}

}  // namespace

std::string tfrecord_frame(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  append_le(out, data.size(), 8);
  append_le(out, masked_crc32c(out.data(), 8), 4);
  out.append(data.data(), data.size());
  append_le(out, masked_crc32c(data.data(), data.size()), 4);
  return out;
}

TfRecordWriter::TfRecordWriter(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  UT_CHECK_TRAIN(fd_ >= 0, "cannot create ", path_, ": ", std::strerror(errno));
}

TfRecordWriter::~TfRecordWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void TfRecordWriter::write(std::string_view data) {
  const std::string record = tfrecord_frame(data);
  size_t done = 0;
  while (done < record.size()) {
    const ssize_t n = ::write(fd_, record.data() + done, record.size() - done);
    if (n < 0 && errno == EINTR) continue;
    UT_CHECK_TRAIN(n > 0, "writing ", path_, " failed: ", std::strerror(errno), " (disk full?)");
    done += static_cast<size_t>(n);
  }
}

}  // namespace unitrain
