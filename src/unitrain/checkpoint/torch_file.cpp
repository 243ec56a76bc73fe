#include "unitrain/checkpoint/torch_file.h"

#include <c10/core/CPUAllocator.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/core/zip_format.h"
#include "unitrain/data/formats/zip_archive.h"

namespace unitrain {
namespace {

constexpr uint16_t kPaddingExtra = 0x4246;              // "FB": PyTorch's alignment padding
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01: files are reproducible
constexpr size_t kAlignment = 64;                       // where PyTorch puts record data

/// Little-endian fields appended to a string.
struct Out {
  std::string bytes;
  void u16(uint64_t v) { put(v, 2); }
  void u32(uint64_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
};

struct Record {
  std::string name;
  const char* data;
  uint64_t size;
  uint32_t crc = 0;
  uint64_t offset = 0;  ///< of its local header
};

/// What an image's pieces point at.
struct Owned {
  std::string pickle;
  std::vector<torch::jit::WriteableTensorData> storages;
  std::deque<std::string> headers;  // a deque: pieces keep pointing at its strings
};

std::string local_header(const Record& r, bool force_zip64) {
  const bool zip64 = force_zip64 || r.size >= zip::kMax32;
  const size_t zip64_size = zip64 ? 4 + 16 : 0;
  const uint64_t unpadded = r.offset + 30 + r.name.size() + zip64_size + 4;
  const size_t padding = (kAlignment - unpadded % kAlignment) % kAlignment;
  Out h;
  h.u32(zip::kLocalHeader);
  h.u16(zip64 ? 45 : 20);  // version needed to extract
  h.u16(0);                // flags
  h.u16(0);                // stored
  h.u16(0);                // time
  h.u16(kDosDate);
  h.u32(r.crc);
  h.u32(zip64 ? zip::kMax32 : r.size);  // compressed size
  h.u32(zip64 ? zip::kMax32 : r.size);  // uncompressed size
  h.u16(r.name.size());
  h.u16(zip64_size + 4 + padding);
  h.bytes += r.name;
  if (zip64) {
    h.u16(zip::kZip64Extra);
    h.u16(16);
    h.u64(r.size);
    h.u64(r.size);
  }
  h.u16(kPaddingExtra);
  h.u16(padding);
  h.bytes.append(padding, '\0');
  return h.bytes;
}

void central_header(Out& h, const Record& r, bool force_zip64) {
  const bool big_size = force_zip64 || r.size >= zip::kMax32;
  const bool big_offset = force_zip64 || r.offset >= zip::kMax32;
  const size_t zip64_fields = (big_size ? 2 : 0) + (big_offset ? 1 : 0);
  h.u32(zip::kCentralHeader);
  h.u16(zip64_fields ? 45 : 20);  // version made by
  h.u16(zip64_fields ? 45 : 20);  // version needed to extract
  h.u16(0);
  h.u16(0);
  h.u16(0);
  h.u16(kDosDate);
  h.u32(r.crc);
  h.u32(big_size ? zip::kMax32 : r.size);
  h.u32(big_size ? zip::kMax32 : r.size);
  h.u16(r.name.size());
  h.u16(zip64_fields ? 4 + 8 * zip64_fields : 0);
  h.u16(0);  // comment
  h.u16(0);  // disk
  h.u16(0);  // internal attributes
  h.u32(0);  // external attributes
  h.u32(big_offset ? zip::kMax32 : r.offset);
  h.bytes += r.name;
  if (zip64_fields) {
    h.u16(zip::kZip64Extra);
    h.u16(8 * zip64_fields);
    if (big_size) {
      h.u64(r.size);
      h.u64(r.size);
    }
    if (big_offset) h.u64(r.offset);
  }
}

/// The central directory and the end records, for a directory starting at `offset`.
std::string central_directory(const std::vector<Record>& records, uint64_t offset,
                              bool force_zip64) {
  Out h;
  for (const Record& r : records) central_header(h, r, force_zip64);
  const uint64_t size = h.bytes.size();
  const uint64_t count = records.size();
  const bool zip64 =
      force_zip64 || count >= zip::kMax16 || size >= zip::kMax32 || offset >= zip::kMax32;
  if (zip64) {
    const uint64_t zip64_end = offset + size;
    h.u32(zip::kZip64EndOfCentral);
    h.u64(44);  // size of the rest of this record
    h.u16(45);
    h.u16(45);
    h.u32(0);
    h.u32(0);
    h.u64(count);
    h.u64(count);
    h.u64(size);
    h.u64(offset);
    h.u32(zip::kZip64Locator);
    h.u32(0);
    h.u64(zip64_end);
    h.u32(1);
  }
  h.u32(zip::kEndOfCentral);
  h.u16(0);
  h.u16(0);
  h.u16(zip64 ? zip::kMax16 : count);
  h.u16(zip64 ? zip::kMax16 : count);
  h.u32(zip64 ? zip::kMax32 : size);
  h.u32(zip64 ? zip::kMax32 : offset);
  h.u16(0);  // comment
  return h.bytes;
}

/// Memory inside a shared buffer as a DataPtr that keeps the buffer alive.
at::DataPtr shared_data_ptr(const std::shared_ptr<const void>& keep, const char* data) {
  auto* context = new std::shared_ptr<const void>(keep);
  return at::DataPtr(
      const_cast<char*>(data), context,
      [](void* c) { delete static_cast<std::shared_ptr<const void>*>(c); }, at::Device(at::kCPU));
}

/// A copy of `size` bytes in memory of LibTorch's CPU allocator.
at::DataPtr copied_data_ptr(const void* data, size_t size) {
  at::DataPtr out = c10::GetCPUAllocator()->allocate(size);
  if (size > 0) std::memcpy(out.get(), data, size);
  return out;
}

/// The records of a PyTorch file by their names below the archive's root folder (PyTorch names
/// the root after the file: `archive/`, `weights/`): "data.pkl", "data/0", "version".
std::map<std::string, ZipEntry> records_by_name(const char* bytes, size_t size,
                                                const std::string& what) {
  const auto entries =
      read_zip_directory(reinterpret_cast<const unsigned char*>(bytes), size, what);
  UT_CHECK_TRAIN(!entries.empty(), what, " is an empty zip archive");
  const std::string& first = entries.front().name;
  const size_t slash = first.find('/');
  UT_CHECK_TRAIN(slash != std::string::npos, what, ": record '", first,
                 "' is not inside a root folder as PyTorch writes them");
  const std::string root = first.substr(0, slash + 1);
  std::map<std::string, ZipEntry> out;
  for (const ZipEntry& e : entries) {
    if (e.name.compare(0, root.size(), root) == 0) out.emplace(e.name.substr(root.size()), e);
  }
  return out;
}

/// TrainError naming `what` and `name` unless every element of tensor `t` lies inside its
/// storage: a pickle gives each tensor's sizes, strides and offset, which LibTorch's unpickler
/// takes as they are, so a damaged or forged file would read memory past its storage.
void check_in_storage(const at::Tensor& t, const std::string& name, const std::string& what) {
  if (!t.defined() || !t.has_storage() || t.numel() == 0) return;
  int64_t last = t.storage_offset();  // the furthest element's index in the storage
  bool ok = last >= 0;
  for (int64_t d = 0; ok && d < t.dim(); ++d) {
    int64_t step = 0;
    ok = t.stride(d) >= 0 && !__builtin_mul_overflow(t.size(d) - 1, t.stride(d), &step) &&
         !__builtin_add_overflow(last, step, &last);
  }
  int64_t bytes = 0;
  ok = ok && !__builtin_mul_overflow(last + 1, int64_t(t.element_size()), &bytes) &&
       uint64_t(bytes) <= t.storage().nbytes();
  UT_CHECK_TRAIN(ok, what, ": tensor ", name, " (sizes ", t.sizes(), ", strides ", t.strides(),
                 ", offset ", t.storage_offset(), ") reaches past the ", t.storage().nbytes(),
                 " bytes of its storage (a damaged file?)");
}

/// check_in_storage of every tensor in `v` (dicts, lists and tuples of them), named by their
/// dict keys.
void check_tensors_in_storage(const c10::IValue& v, const std::string& name,
                              const std::string& what, int depth = 0) {
  UT_CHECK_TRAIN(depth < 64, what, ": values nested more than 64 deep");
  if (v.isTensor()) {
    check_in_storage(v.toTensor(), name, what);
  } else if (v.isGenericDict()) {
    for (const auto& e : v.toGenericDict()) {
      const std::string key = e.key().isString() ? e.key().toStringRef() : "?";
      check_tensors_in_storage(e.value(), name.empty() ? key : name + "." + key, what, depth + 1);
    }
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) check_tensors_in_storage(e, name, what, depth + 1);
  } else if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements()) {
      check_tensors_in_storage(e, name, what, depth + 1);
    }
  }
}

}  // namespace

c10::IValue decode_torch_file(const std::shared_ptr<const std::vector<char>>& bytes,
                              const std::string& what) {
  return decode_torch_file(bytes->data(), bytes->size(), bytes, what);
}

c10::IValue decode_torch_file(const char* bytes, size_t size,
                              const std::shared_ptr<const void>& keep, const std::string& what) {
  const std::map<std::string, ZipEntry> records = records_by_name(bytes, size, what);
  const auto* base = reinterpret_cast<const unsigned char*>(bytes);
  // A record's bytes: in place when stored (as PyTorch writes them) and aligned for any
  // element type; else a copy (inflated when compressed).
  auto record = [&](const std::string& name) -> std::pair<at::DataPtr, size_t> {
    auto it = records.find(name);
    UT_CHECK_TRAIN(it != records.end(), what, " has no record ", name);
    const ZipEntry& e = it->second;
    if (e.method != 0) {
      auto inflated = inflate_zip_entry(base, e, what);
      return {copied_data_ptr(inflated->data(), inflated->size()), inflated->size()};
    }
    const char* data = bytes + e.data_offset;
    if (reinterpret_cast<uintptr_t>(data) % alignof(std::max_align_t) != 0) {
      return {copied_data_ptr(data, e.uncompressed_size), e.uncompressed_size};
    }
    return {shared_data_ptr(keep, data), e.uncompressed_size};
  };

  auto [pickle, pickle_size] = record("data.pkl");
  size_t pickle_read = 0;
  auto reader = [&, pickle_data = static_cast<const char*>(pickle.get()),
                 pickle_size = pickle_size](char* out, size_t n) -> size_t {
    n = std::min(n, pickle_size - pickle_read);
    std::memcpy(out, pickle_data + pickle_read, n);
    pickle_read += n;
    return n;
  };
  auto read_record = [&](const std::string& key) { return record("data/" + key).first; };
  torch::jit::Unpickler unpickler(reader, nullptr, nullptr, read_record, c10::nullopt);
  for (const char* name : {"version", ".data/version"}) {
    auto it = records.find(name);
    if (it == records.end() || it->second.method != 0) continue;
    const std::string text(bytes + it->second.data_offset, it->second.uncompressed_size);
    unpickler.set_version(std::strtoull(text.c_str(), nullptr, 10));
    break;
  }
  c10::IValue value;
  try {
    value = unpickler.parse_ivalue();
  } catch (const c10::Error&) {
    // LibTorch's own words ("numel: integer multiplication overflow") name no tensor or file.
    throw TrainError(what +
                     ": its data.pkl does not unpickle into tensors LibTorch can build (a "
                     "size past 2^63, an unknown object or a damaged pickle)");
  }
  check_tensors_in_storage(value, "", what);
  return value;
}

FileImage encode_torch_file(const c10::IValue& value, bool force_zip64) {
  auto owned = std::make_shared<Owned>();
  {
    // Without type tags (torch.jit._pickle.restore_type_tag on every dict and list): PyTorch
    // 2.6's torch.load reads only plain containers by default (weights_only), as torch.save
    // writes them; LibTorch reads either.
    torch::jit::Pickler pickler([&owned](const char* p, size_t n) { owned->pickle.append(p, n); },
                                nullptr, nullptr, nullptr, nullptr, /*tag_aggregates=*/false);
    pickler.protocol();
    pickler.pushIValue(value);
    pickler.stop();
    for (const at::Tensor& t : pickler.tensorData()) {
      owned->storages.push_back(torch::jit::getWriteableTensorData(t));
    }
  }
  static const char kVersion[] = "3\n";  // the format version PyTorch 1.13 writes
  std::vector<Record> records;
  records.push_back({"archive/data.pkl", owned->pickle.data(), owned->pickle.size()});
  for (size_t i = 0; i < owned->storages.size(); ++i) {
    const auto& s = owned->storages[i];
    records.push_back({"archive/data/" + std::to_string(i), s.data(), s.sizeInBytes()});
  }
  records.push_back({"archive/version", kVersion, 2});

  FileImage image;
  uint64_t offset = 0;
  uint32_t crc = 0;
  for (Record& r : records) {
    r.crc = crc32_of(r.data, r.size);
    r.offset = offset;
    const std::string& header = owned->headers.emplace_back(local_header(r, force_zip64));
    image.pieces.push_back({header.data(), header.size()});
    image.pieces.push_back({r.data, r.size});
    crc = crc32_of(header.data(), header.size(), crc);
    crc = crc32_combine_of(crc, r.crc, r.size);
    offset += header.size() + r.size;
  }
  const std::string& tail =
      owned->headers.emplace_back(central_directory(records, offset, force_zip64));
  image.pieces.push_back({tail.data(), tail.size()});
  image.crc32 = crc32_of(tail.data(), tail.size(), crc);
  image.keep = std::move(owned);
  return image;
}

}  // namespace unitrain
