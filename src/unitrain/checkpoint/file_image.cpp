#include "unitrain/checkpoint/file_image.h"

#include <fcntl.h>
#include <isa-l/crc.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

std::string errno_message() { return std::strerror(errno); }

/// Writes an image to a new file and fsyncs it; TrainError naming the path on any failure
/// (a full disk shows as a short write or ENOSPC).
///
/// Large files bypass the page cache (O_DIRECT) through aligned staging buffers: on a virtual
/// disk a buffered write of a few hundred MB costs about as much kernel CPU as it takes wall
/// time (the page-cache copy and writeback), which an async save would take from training; a
/// direct write costs a user-space copy and little else (docs/performance.md). Two buffers: the
/// next one is filled while the last one is written (a direct write returns only when the disk
/// has it, so one buffer would add the copies' time to the disk's). Filesystems without
/// O_DIRECT (some network ones) get the buffered path, and so does tmpfs, which accepts
/// O_DIRECT since Linux 6.6 but has no disk to bypass: there a staging copy would only add a
/// copy of every byte.
class SyncedWriter {
 public:
  SyncedWriter(std::string path, size_t size) : path_(std::move(path)), size_(size) {
    direct_ = size_ >= kDirectMin;
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (direct_ ? O_DIRECT : 0),
                 0644);
    if (fd_ < 0 && direct_ && errno == EINVAL) {
      direct_ = false;
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    UT_CHECK_TRAIN(fd_ >= 0, "cannot create ", path_, ": ", errno_message());
    struct statfs fs {};
    if (direct_ && ::fstatfs(fd_, &fs) == 0 && fs.f_type == TMPFS_MAGIC) buffered();
    if (direct_) {
      if (!(staging_ = aligned_buffer()) || !(spare_ = aligned_buffer())) {
        staging_.reset();
        buffered();
      }
    }
  }
  ~SyncedWriter() {
    // Left by an error elsewhere: the write may not outlive its buffer and descriptor (its
    // own error, if any, is dropped: the first one is already on its way).
    if (in_flight_.valid()) in_flight_.wait();
    if (fd_ >= 0) ::close(fd_);
  }

  void write(const char* data, size_t size) {
    if (!staging_) return write_out(data, size);
    while (size > 0) {
      const size_t n = std::min(size, kStaging - filled_);
      std::memcpy(staging_.get() + filled_, data, n);
      filled_ += n;
      data += n;
      size -= n;
      if (filled_ == kStaging) write_behind();
    }
  }

  void finish() {
    if (staging_) {
      wait_for_write();
      flush_staging();
    }
    int rc = ::fsync(fd_);
    int err = errno;
    ::close(fd_);
    fd_ = -1;
    UT_CHECK_TRAIN(rc == 0, "syncing ", path_, " failed: ", std::strerror(err));
  }

 private:
  static constexpr size_t kDirectMin = size_t(4) << 20;  // smaller files: the page cache
  static constexpr size_t kAlign = 4096;
  static constexpr size_t kStaging = size_t(8) << 20;

  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  using Buffer = std::unique_ptr<char, Free>;

  static Buffer aligned_buffer() {
    void* p = nullptr;
    return Buffer(::posix_memalign(&p, kAlign, kStaging) == 0 ? static_cast<char*>(p) : nullptr);
  }

  /// The full staging buffer goes to the disk on a thread of its own (after the write before
  /// it: one in flight), and the spare one is filled meanwhile.
  void write_behind() {
    wait_for_write();
    std::swap(staging_, spare_);
    filled_ = 0;
    in_flight_ =
        std::async(std::launch::async, [this, data = spare_.get()] { write_out(data, kStaging); });
  }

  /// Waits for the write in flight; its error (TrainError) is thrown here.
  void wait_for_write() {
    if (in_flight_.valid()) in_flight_.get();
  }

  /// Writes the staging buffer: its block-aligned part directly, a tail (the file's end)
  /// through the page cache.
  void flush_staging() {
    const size_t aligned = filled_ & ~(kAlign - 1);
    write_out(staging_.get(), aligned);
    if (filled_ > aligned) {
      buffered();
      write_out(staging_.get() + aligned, filled_ - aligned);
    }
    filled_ = 0;
  }

  void buffered() {
    if (!direct_) return;
    direct_ = false;
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_DIRECT);
  }

  void write_out(const char* data, size_t size) {
    size_t at = 0;
    while (at < size) {
      ssize_t n = ::write(fd_, data + at, std::min<size_t>(size - at, size_t(1) << 26));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EINVAL && direct_) {  // the filesystem refuses direct writes after all
        buffered();
        continue;
      }
      if (n <= 0) {
        throw TrainError(
            detail::concat("writing ", path_, " failed after ", done_ + at, " of ", size_,
                           " bytes: ", n == 0 ? "no space left" : std::strerror(errno)));
      }
      at += size_t(n);
      if (direct_ && at < size) buffered();  // a short direct write: the rest is unaligned
    }
    done_ += size;
  }

  std::string path_;
  size_t size_;
  int fd_ = -1;
  bool direct_ = false;
  Buffer staging_;  ///< being filled
  Buffer spare_;    ///< being written (in_flight_), then filled next
  size_t filled_ = 0;
  size_t done_ = 0;              ///< bytes written (by one write at a time)
  std::future<void> in_flight_;  ///< the write of spare_, while staging_ fills
};

}  // namespace

void write_synced(const std::string& path, const FileImage& image) {
  SyncedWriter out(path, image.size());
  for (const FileImage::Piece& piece : image.pieces) out.write(piece.data, piece.size);
  out.finish();
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  UT_CHECK_TRAIN(in.good(), "checkpoint file ", path, " is missing or unreadable");
  std::vector<char> bytes(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  UT_CHECK_TRAIN(in.good() || bytes.empty(), "reading ", path, " failed");
  return bytes;
}

uint32_t crc32_of_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  UT_CHECK_TRAIN(fd >= 0, "checkpoint file ", path,
                 " is missing or unreadable: ", std::strerror(errno));
  std::unique_ptr<char[]> buffer(new char[size_t(4) << 20]);
  uint32_t crc = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buffer.get(), size_t(4) << 20);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      UT_CHECK_TRAIN(n == 0, "reading ", path, " failed: ", std::strerror(error));
      return crc;
    }
    crc = crc32_of(buffer.get(), static_cast<size_t>(n), crc);
  }
}

uint32_t crc32_of(const char* data, size_t size, uint32_t crc) {
  // ISA-L's folding CRC (PCLMULQDQ where the CPU has it): the same CRC-32 as zlib's, ~5x faster.
  while (size > 0) {
    const uint64_t chunk = std::min<size_t>(size, size_t(1) << 30);
    crc = ::crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(data), chunk);
    data += chunk;
    size -= chunk;
  }
  return crc;
}

uint32_t crc32_combine_of(uint32_t crc_a, uint32_t crc_b, uint64_t size_b) {
  return static_cast<uint32_t>(::crc32_combine64(crc_a, crc_b, static_cast<z_off64_t>(size_b)));
}

uint32_t crc32_of(const FileImage& image) {
  if (image.crc32) return *image.crc32;
  uint32_t crc = 0;
  for (const FileImage::Piece& p : image.pieces) crc = crc32_of(p.data, p.size, crc);
  return crc;
}

FileImage::FileImage(std::vector<char> bytes) {
  auto owned = std::make_shared<const std::vector<char>>(std::move(bytes));
  pieces.push_back({owned->data(), owned->size()});
  keep = std::move(owned);
}

size_t FileImage::size() const {
  size_t n = 0;
  for (const Piece& p : pieces) n += p.size;
  return n;
}

std::vector<char> FileImage::bytes() const {
  std::vector<char> out;
  out.reserve(size());
  for (const Piece& p : pieces) out.insert(out.end(), p.data, p.data + p.size);
  return out;
}

}  // namespace unitrain
