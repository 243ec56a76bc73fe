#include "unitrain/data/formats/zip_archive.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "unitrain/core/error.h"
#include "unitrain/core/zip_format.h"

namespace unitrain {
namespace {

constexpr size_t kEndOfDirectorySize = 22;
constexpr size_t kLocatorSize = 20;

/// Little-endian fields read in order from `pos`; a read past the end is a ConfigError.
class FieldReader {
 public:
  FieldReader(const unsigned char* bytes, size_t size, uint64_t pos, const std::string& where)
      : bytes_(bytes), size_(size), pos_(pos), where_(where) {}

  uint64_t pos() const { return pos_; }
  uint16_t u16() { return static_cast<uint16_t>(read(2)); }
  uint32_t u32() { return static_cast<uint32_t>(read(4)); }
  uint64_t u64() { return read(8); }
  void skip(uint64_t n) {
    need(n);
    pos_ += n;
  }
  std::string text(uint64_t n) {
    need(n);
    std::string s(reinterpret_cast<const char*>(bytes_ + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  void need(uint64_t n) const {
    UT_CHECK(pos_ <= size_ && n <= size_ - pos_, where_,
             ": truncated zip archive (a record at byte ", pos_, " runs past its end, ", size_,
             " bytes); copy or save it again");
  }
  uint64_t read(int n) {
    need(static_cast<uint64_t>(n));
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | bytes_[pos_ + i];
    pos_ += n;
    return v;
  }
  const unsigned char* bytes_;
  size_t size_;
  uint64_t pos_;
  const std::string& where_;
};

/// Where the central directory starts and how many entries it holds.
struct Directory {
  uint64_t offset = 0;
  uint64_t entries = 0;
};

Directory find_directory(const unsigned char* bytes, size_t size, const std::string& where) {
  // The end record is the last 22 bytes, or fewer than 65535 bytes of comment before them.
  size_t end = std::string::npos;
  if (size >= kEndOfDirectorySize) {
    const size_t lowest =
        size - kEndOfDirectorySize - std::min<size_t>(size - kEndOfDirectorySize, 0xFFFF);
    for (size_t p = size - kEndOfDirectorySize + 1; p-- > lowest;) {
      if (FieldReader(bytes, size, p, where).u32() == zip::kEndOfCentral) {
        end = p;
        break;
      }
    }
  }
  if (end == std::string::npos) {
    const bool npy = size >= 6 && std::memcmp(bytes, "\x93NUMPY", 6) == 0;
    throw ConfigError(detail::concat(
        where, ": not a zip archive (no end of central directory record)",
        npy ? "; it is a .npy file: read it with the npy dataset (type: npy)"
            : "; .npz files are written by np.savez or np.savez_compressed (truncated?)"));
  }
  FieldReader r(bytes, size, end + 4, where);
  const uint16_t disk = r.u16(), directory_disk = r.u16();
  r.skip(2);
  Directory d;
  d.entries = r.u16();
  r.skip(4);
  d.offset = r.u32();
  if (end >= kLocatorSize &&
      FieldReader(bytes, size, end - kLocatorSize, where).u32() == zip::kZip64Locator) {
    FieldReader locator(bytes, size, end - kLocatorSize + 8, where);
    FieldReader z(bytes, size, locator.u64(), where);
    UT_CHECK(z.u32() == zip::kZip64EndOfCentral, where,
             ": damaged zip archive (its ZIP64 end record is not where the locator says)");
    z.skip(8 + 2 + 2);
    const uint32_t disk64 = z.u32(), directory_disk64 = z.u32();
    UT_CHECK(disk64 == 0 && directory_disk64 == 0, where,
             ": a zip archive split over several disks is not supported; join it into one file");
    z.skip(8);
    d.entries = z.u64();
    z.skip(8);
    d.offset = z.u64();
    return d;
  }
  UT_CHECK(disk == 0 && directory_disk == 0, where,
           ": a zip archive split over several disks is not supported; join it into one file");
  return d;
}

/// Reads the ZIP64 extra field of a central directory entry: each value whose 32-bit field
/// is 0xFFFFFFFF is there, in this order.
void read_zip64_extra(FieldReader extra, uint64_t extra_end, ZipEntry& e, bool size_unset,
                      bool compressed_unset, bool offset_unset, uint64_t& local_offset) {
  while (extra.pos() + 4 <= extra_end) {
    const uint16_t id = extra.u16(), length = extra.u16();
    const uint64_t next = extra.pos() + length;
    if (id == zip::kZip64Extra) {
      if (size_unset) e.uncompressed_size = extra.u64();
      if (compressed_unset) e.compressed_size = extra.u64();
      if (offset_unset) local_offset = extra.u64();
      return;
    }
    extra.skip(length);
    if (extra.pos() != next) return;
  }
}

}  // namespace

std::vector<ZipEntry> read_zip_directory(const unsigned char* bytes, size_t size,
                                         const std::string& where) {
  const Directory directory = find_directory(bytes, size, where);
  std::vector<ZipEntry> entries;
  FieldReader r(bytes, size, directory.offset, where);
  for (uint64_t i = 0; i < directory.entries; ++i) {
    UT_CHECK(r.u32() == zip::kCentralHeader, where,
             ": damaged zip archive (central directory entry ", i, " at byte ", r.pos() - 4,
             " has no signature)");
    ZipEntry e;
    r.skip(4);
    const uint16_t flags = r.u16();
    e.method = r.u16();
    r.skip(4);
    e.crc32 = r.u32();
    const uint32_t compressed = r.u32(), uncompressed = r.u32();
    const uint16_t name_size = r.u16(), extra_size = r.u16(), comment_size = r.u16();
    r.skip(8);
    const uint32_t offset = r.u32();
    e.name = r.text(name_size);
    e.compressed_size = compressed;
    e.uncompressed_size = uncompressed;
    uint64_t local_offset = offset;
    const uint64_t extra_start = r.pos();
    r.skip(extra_size);
    read_zip64_extra(FieldReader(bytes, size, extra_start, where), extra_start + extra_size, e,
                     uncompressed == zip::kMax32, compressed == zip::kMax32, offset == zip::kMax32,
                     local_offset);
    r.skip(comment_size);
    UT_CHECK((flags & 1) == 0, where, ": member '", e.name,
             "' is encrypted; save the arrays again with np.savez, without a password");
    UT_CHECK(e.method == 0 || e.method == 8, where, ": member '", e.name,
             "' uses zip compression method ", e.method,
             "; only stored (np.savez) and deflate (np.savez_compressed) are read");
    FieldReader local(bytes, size, local_offset, where);
    UT_CHECK(local.u32() == zip::kLocalHeader, where, ": damaged zip archive (member '", e.name,
             "' has no local header at byte ", local_offset, ")");
    local.skip(22);
    const uint16_t local_name = local.u16(), local_extra = local.u16();
    e.data_offset = local.pos() + local_name + local_extra;
    UT_CHECK(e.data_offset <= size && e.compressed_size <= size - e.data_offset, where,
             ": member '", e.name, "' needs ", e.compressed_size, " bytes from byte ",
             e.data_offset, " but the archive ends at ", size,
             " (truncated? copy or save it again)");
    UT_CHECK(e.method != 0 || e.compressed_size == e.uncompressed_size, where,
             ": damaged zip archive (stored member '", e.name, "' has ", e.compressed_size,
             " bytes, its directory says ", e.uncompressed_size, ")");
    entries.push_back(std::move(e));
  }
  return entries;
}

std::shared_ptr<const std::vector<unsigned char>> inflate_zip_entry(const unsigned char* archive,
                                                                    const ZipEntry& entry,
                                                                    const std::string& where) {
  auto out = std::make_shared<std::vector<unsigned char>>(entry.uncompressed_size);
  z_stream zs{};
  UT_CHECK(inflateInit2(&zs, -MAX_WBITS) == Z_OK, where, ": cannot start zlib's inflate");
  const unsigned char* in = archive + entry.data_offset;
  uint64_t in_left = entry.compressed_size;
  uint64_t out_done = 0;
  int rc = Z_OK;
  constexpr uint64_t kChunk = uint64_t{1} << 30;  // zlib counts in 32-bit units
  while (rc == Z_OK) {
    if (zs.avail_in == 0 && in_left > 0) {
      zs.next_in = const_cast<unsigned char*>(in);
      zs.avail_in = static_cast<uInt>(std::min(in_left, kChunk));
      in += zs.avail_in;
      in_left -= zs.avail_in;
    }
    zs.next_out = out->data() + out_done;
    zs.avail_out = static_cast<uInt>(std::min(entry.uncompressed_size - out_done, kChunk));
    const uInt room = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    out_done += room - zs.avail_out;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0) break;  // input ended early
    if (rc == Z_BUF_ERROR && out_done < entry.uncompressed_size) rc = Z_OK;
  }
  const std::string message = zs.msg != nullptr ? zs.msg : "";
  inflateEnd(&zs);
  UT_CHECK(rc == Z_STREAM_END && out_done == entry.uncompressed_size, where, ": member '",
           entry.name, "' cannot be inflated (",
           message.empty()
               ? "the stream ends before its " + std::to_string(entry.uncompressed_size) + " bytes"
               : message,
           "): the archive is damaged; save it again with np.savez_compressed");
  UT_CHECK(crc32_z(0, out->data(), out->size()) == entry.crc32, where, ": member '", entry.name,
           "' fails its CRC-32 check: the archive is damaged; save it again");
  return out;
}

}  // namespace unitrain
