#include "unitrain/checkpoint/safetensors.h"

#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <vector>

#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/core/error.h"
#include "unitrain/core/mapped_file.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.cpp reads and writes tensor bytes as they are: it needs a little-endian machine"
#endif

namespace unitrain {
namespace {

using nlohmann::json;

constexpr const char* kMetadataKey = "__metadata__";

struct SafetensorsDtype {
  const char* name;
  torch::Dtype dtype;
  size_t size;
};

constexpr SafetensorsDtype kDtypes[] = {
    {"F64", torch::kFloat64, 8},   {"F32", torch::kFloat32, 4}, {"F16", torch::kFloat16, 2},
    {"BF16", torch::kBFloat16, 2}, {"I64", torch::kInt64, 8},   {"I32", torch::kInt32, 4},
    {"I16", torch::kInt16, 2},     {"I8", torch::kInt8, 1},     {"U8", torch::kUInt8, 1},
    {"BOOL", torch::kBool, 1},
};

std::string dtype_names() {
  std::string out;
  for (const auto& d : kDtypes) out += (out.empty() ? "" : ", ") + std::string(d.name);
  return out;
}

/// One tensor's entry in the header, checked on its own.
struct Entry {
  std::string name;
  const SafetensorsDtype* dtype = nullptr;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

/// Reads and checks one file's header; every error names `key`, the file and the tensor.
class HeaderReader {
 public:
  HeaderReader(const std::string& key, const std::string& path)
      : where_(detail::concat(key, ": '", path, "'")) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(detail::concat(where_, " is not a valid safetensors file: ", what));
  }
  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const {
    fail(detail::concat("tensor '", tensor, "': ", what));
  }

  json parse(const char* begin, const char* end) const {
    std::set<std::string> names;
    // nlohmann keeps the last of duplicate keys silently: a second entry of a name is refused.
    const json::parser_callback_t no_duplicates = [&](int depth, json::parse_event_t event,
                                                      json& parsed) {
      if (depth == 1 && event == json::parse_event_t::key &&
          !names.insert(parsed.get<std::string>()).second) {
        fail(parsed.get<std::string>(), "named twice in the header");
      }
      return true;
    };
    json header;
    try {
      header = json::parse(begin, end, no_duplicates);
    } catch (const json::exception& e) {
      fail(detail::concat("its header (", end - begin, " bytes after the 8-byte length) is not ",
                          "JSON: ", e.what()));
    }
    if (!header.is_object()) fail("its header is JSON but not an object of tensors");
    return header;
  }

  std::map<std::string, std::string> metadata(const json& value) const {
    if (!value.is_object())
      fail(detail::concat(kMetadataKey, " must be an object of strings, got ", value.dump()));
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : value.items()) {
      if (!v.is_string()) {
        fail(detail::concat(kMetadataKey, ".", k, " must be a string, got ", v.dump()));
      }
      out[k] = v.get<std::string>();
    }
    return out;
  }

  Entry entry(const std::string& name, const json& value) const {
    Entry e;
    e.name = name;
    if (!value.is_object()) {
      fail(name, "expected {\"dtype\", \"shape\", \"data_offsets\"}, got " + value.dump());
    }
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      if (!value.contains(field)) fail(name, detail::concat("no \"", field, "\""));
    }
    const json& dtype = value["dtype"];
    if (!dtype.is_string()) fail(name, "dtype must be a string, got " + dtype.dump());
    for (const auto& d : kDtypes) {
      if (dtype.get<std::string>() == d.name) e.dtype = &d;
    }
    if (e.dtype == nullptr) {
      fail(name, detail::concat("unknown dtype ", dtype.dump(), " (known: ", dtype_names(), ")"));
    }
    const json& shape = value["shape"];
    if (!shape.is_array()) fail(name, "shape must be a list of sizes, got " + shape.dump());
    uint64_t elements = 1;
    bool overflow = false;
    for (const json& d : shape) {
      if (!d.is_number_unsigned() ||
          d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
        fail(name, "shape must hold sizes >= 0, got " + shape.dump());
      }
      e.shape.push_back(d.get<int64_t>());
      overflow = overflow || __builtin_mul_overflow(elements, d.get<uint64_t>(), &elements);
    }
    const json& offsets = value["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned() ||
        offsets[0].get<uint64_t>() > offsets[1].get<uint64_t>()) {
      fail(name, "data_offsets must be [begin, end] with 0 <= begin <= end, got " + offsets.dump());
    }
    e.begin = offsets[0].get<uint64_t>();
    e.end = offsets[1].get<uint64_t>();
    uint64_t bytes = 0;
    overflow = overflow || __builtin_mul_overflow(elements, uint64_t(e.dtype->size), &bytes);
    if (overflow || bytes != e.end - e.begin) {
      fail(name,
           detail::concat(e.dtype->name, " ", shape.dump(), " needs ",
                          overflow ? std::string("more than 2^64") : std::to_string(bytes),
                          " bytes, but data_offsets ", offsets.dump(), " hold ", e.end - e.begin));
    }
    return e;
  }

  /// Checks that `entries` (sorted by offset) cover [0, data_size) exactly.
  void check_layout(const std::vector<Entry>& entries, uint64_t data_size) const {
    uint64_t at = 0;
    const Entry* previous = nullptr;
    for (const Entry& e : entries) {
      if (e.end > data_size) {
        fail(e.name, detail::concat("its bytes [", e.begin, ", ", e.end,
                                    ") run past the end of the ", "file, which holds ", data_size,
                                    " bytes of data after the ", "header (truncated?)"));
      }
      if (e.begin < at) {
        fail(e.name,
             detail::concat("its bytes [", e.begin, ", ", e.end, ") overlap those of '",
                            previous->name, "' [", previous->begin, ", ", previous->end, ")"));
      }
      if (e.begin > at) {
        fail(e.name,
             detail::concat("bytes [", at, ", ", e.begin, ") before it belong to no tensor ",
                            "(the offsets must cover the data without gaps)"));
      }
      at = e.end;
      previous = &e;
    }
    if (at != data_size) {
      fail(detail::concat(data_size - at, " bytes after the last tensor belong to no tensor (the ",
                          "data holds ", data_size, " bytes, the tensors end at ", at, ")"));
    }
  }

 private:
  std::string where_;
};

uint64_t read_le64(const unsigned char* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);  // little-endian host (checked above)
  return v;
}

}  // namespace

SafetensorsContent read_safetensors(const std::string& path, const std::string& key) {
  const MappedFile file(path, key, MappedFile::Access::Sequential);
  const HeaderReader reader(key, path);
  const uint64_t size = file.size();
  if (size < 8) {
    reader.fail(detail::concat("it holds ", size, " bytes, less than the 8-byte header length"));
  }
  const uint64_t header_size = read_le64(file.data());
  if (header_size > size - 8) {
    reader.fail(detail::concat("its header length says ", header_size, " bytes, but only ",
                               size - 8, " follow (truncated, or not a safetensors file)"));
  }
  const char* header_begin = reinterpret_cast<const char*>(file.data()) + 8;
  const json header = reader.parse(header_begin, header_begin + header_size);

  SafetensorsContent out;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      out.metadata = reader.metadata(value);
    } else {
      entries.push_back(reader.entry(name, value));
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  const uint64_t data_size = size - 8 - header_size;
  reader.check_layout(entries, data_size);

  const unsigned char* data = file.data() + 8 + header_size;
  out.tensors.reserve(entries.size());
  for (const Entry& e : entries) {
    torch::Tensor t = torch::empty(e.shape, torch::TensorOptions().dtype(e.dtype->dtype));
    const size_t bytes = e.end - e.begin;
    if (bytes > 0) std::memcpy(t.data_ptr(), data + e.begin, bytes);
    if (e.dtype->dtype == torch::kBool) {
      const unsigned char* bad =
          std::find_if(data + e.begin, data + e.end, [](unsigned char b) { return b > 1; });
      if (bad != data + e.end) {
        reader.fail(e.name, detail::concat("BOOL byte ", bad - (data + e.begin), " is ", int(*bad),
                                           ", not 0 or 1"));
      }
    }
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

bool is_safetensors(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::path(path).extension() == ".safetensors") return true;
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec || size < 10) return false;
  std::ifstream in(path, std::ios::binary);
  unsigned char head[9];
  if (!in.read(reinterpret_cast<char*>(head), sizeof head)) return false;
  const uint64_t header_size = read_le64(head);
  return header_size >= 2 && header_size <= size - 8 && head[8] == '{';
}

FileImage safetensors_image(const NamedTensors& tensors,
                            const std::map<std::string, std::string>& metadata) {
  struct Kept {
    std::string head;
    std::vector<torch::Tensor> tensors;
  };
  auto kept = std::make_shared<Kept>();
  std::map<std::string, torch::Tensor> sorted;
  for (const auto& [name, t] : tensors) {
    UT_CHECK(name != kMetadataKey, "safetensors: a tensor may not be named ", kMetadataKey,
             " (the header's metadata entry)");
    UT_CHECK(t.defined(), "safetensors: tensor '", name, "' is undefined");
    UT_CHECK(sorted.emplace(name, t).second, "safetensors: tensor '", name, "' is named twice");
  }
  json header = json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  uint64_t at = 0;
  for (const auto& [name, given] : sorted) {
    const auto* d = std::find_if(std::begin(kDtypes), std::end(kDtypes), [&](const auto& known) {
      return known.dtype == given.scalar_type();
    });
    UT_CHECK(d != std::end(kDtypes), "safetensors: tensor '", name, "' has dtype ",
             given.scalar_type(), ", which the format has no name for (it holds ", dtype_names(),
             ")");
    torch::Tensor t = given.detach().to(torch::kCPU).contiguous();
    header[name] = {
        {"dtype", d->name}, {"shape", t.sizes().vec()}, {"data_offsets", {at, at + t.nbytes()}}};
    at += t.nbytes();
    kept->tensors.push_back(std::move(t));
  }
  std::string text = header.dump();  // std::map keys: sorted
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t length = text.size();
  kept->head.assign(reinterpret_cast<const char*>(&length), 8);  // little-endian host
  kept->head += text;

  FileImage image;
  image.pieces.push_back({kept->head.data(), kept->head.size()});
  for (const torch::Tensor& t : kept->tensors) {
    if (t.nbytes() > 0)
      image.pieces.push_back({static_cast<const char*>(t.data_ptr()), t.nbytes()});
  }
  image.keep = kept;
  return image;
}

void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const FileImage image = safetensors_image(tensors, metadata);
  const std::string partial = path + ".partial-" + CheckpointStore::writer_tag();
  try {
    write_synced(partial, image);
    UT_CHECK_TRAIN(std::rename(partial.c_str(), path.c_str()) == 0, "cannot rename ", partial,
                   " to ", path, ": ", std::strerror(errno));
  } catch (...) {
    ::unlink(partial.c_str());
    throw;
  }
}

}  // namespace unitrain
