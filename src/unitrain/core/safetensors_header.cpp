#include "unitrain/core/safetensors_header.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "unitrain/core/error.h"
#include "unitrain/core/json_excerpt.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors_header.cpp reads the header's length as it is: it needs a little-endian machine"
#endif

namespace unitrain {
namespace {

using nlohmann::json;

constexpr const char* kMetadataKey = "__metadata__";
/// The safetensors package's own limit on a header (MAX_HEADER_SIZE): more is not a real file.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

std::string known_dtype_names() {
  std::string out;
  for (const auto& d : safetensors_dtypes()) out += (out.empty() ? "" : ", ") + std::string(d.name);
  return out;
}

/// Reads and checks one file's header; every error names `key`, the file and the tensor.
class HeaderReader {
 public:
  HeaderReader(const std::string& key, const std::string& path)
      : where_(detail::concat(key, ": '", path, "'")) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(detail::concat(where_, " is not a valid safetensors file: ", what));
  }
  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const {
    fail(detail::concat("tensor '", text_excerpt(tensor), "': ", what));
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
                          "JSON: ", json_error_text(e)));
    }
    if (!header.is_object()) fail("its header is JSON but not an object of tensors");
    return header;
  }

  std::map<std::string, std::string> metadata(const json& value) const {
    if (!value.is_object())
      fail(
          detail::concat(kMetadataKey, " must be an object of strings, got ", json_excerpt(value)));
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : value.items()) {
      if (!v.is_string()) {
        fail(detail::concat(kMetadataKey, ".", text_excerpt(k), " must be a string, got ",
                            json_excerpt(v)));
      }
      out[k] = v.get<std::string>();
    }
    return out;
  }

  SafetensorsEntry entry(const std::string& name, const json& value) const {
    SafetensorsEntry e;
    e.name = name;
    if (!value.is_object()) {
      fail(name, "expected {\"dtype\", \"shape\", \"data_offsets\"}, got " + json_excerpt(value));
    }
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      if (!value.contains(field)) fail(name, detail::concat("no \"", field, "\""));
    }
    const json& dtype = value["dtype"];
    if (!dtype.is_string()) fail(name, "dtype must be a string, got " + json_excerpt(dtype));
    for (const auto& d : safetensors_dtypes()) {
      if (dtype.get<std::string>() == d.name) e.dtype = &d;
    }
    if (e.dtype == nullptr) {
      fail(name, detail::concat("unknown dtype ", json_excerpt(dtype),
                                " (known: ", known_dtype_names(), ")"));
    }
    const json& shape = value["shape"];
    if (!shape.is_array()) fail(name, "shape must be a list of sizes, got " + json_excerpt(shape));
    uint64_t elements = 1;
    bool overflow = false;
    for (const json& d : shape) {
      if (!d.is_number_unsigned() ||
          d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
        fail(name, "shape must hold sizes >= 0, got " + json_excerpt(shape));
      }
      e.shape.push_back(d.get<int64_t>());
      overflow = overflow || __builtin_mul_overflow(elements, d.get<uint64_t>(), &elements);
    }
    const json& offsets = value["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned() ||
        offsets[0].get<uint64_t>() > offsets[1].get<uint64_t>()) {
      fail(name, "data_offsets must be [begin, end] with 0 <= begin <= end, got " +
                     json_excerpt(offsets));
    }
    e.begin = offsets[0].get<uint64_t>();
    e.end = offsets[1].get<uint64_t>();
    uint64_t bytes = 0;
    overflow = overflow || __builtin_mul_overflow(elements, uint64_t(e.dtype->size), &bytes);
    // LibTorch counts a tensor's bytes in int64: more is no tensor it can hold.
    overflow = overflow || bytes > uint64_t(std::numeric_limits<int64_t>::max());
    if (overflow || bytes != e.end - e.begin) {
      fail(name, detail::concat(e.dtype->name, " ", json_excerpt(shape), " needs ",
                                overflow ? std::string("more than 2^63") : std::to_string(bytes),
                                " bytes, but data_offsets ", json_excerpt(offsets), " hold ",
                                e.end - e.begin));
    }
    return e;
  }

  /// Checks that `entries` (sorted by offset) cover [0, data_size) exactly.
  void check_layout(const std::vector<SafetensorsEntry>& entries, uint64_t data_size) const {
    uint64_t at = 0;
    const SafetensorsEntry* previous = nullptr;
    for (const SafetensorsEntry& e : entries) {
      if (e.end > data_size) {
        fail(e.name, detail::concat("its bytes [", e.begin, ", ", e.end,
                                    ") run past the end of the file, which holds ", data_size,
                                    " bytes of data after the header (truncated?)"));
      }
      if (e.begin < at) {
        fail(e.name, detail::concat("its bytes [", e.begin, ", ", e.end, ") overlap those of '",
                                    text_excerpt(previous->name), "' [", previous->begin, ", ",
                                    previous->end, ")"));
      }
      if (e.begin > at) {
        fail(e.name, detail::concat("bytes [", at, ", ", e.begin, ") before it belong to no ",
                                    "tensor (the offsets must cover the data without gaps)"));
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

/// The header's length from the file's first 8 bytes, checked against the file's size.
uint64_t header_length(const HeaderReader& reader, const unsigned char* head, uint64_t head_size,
                       uint64_t file_size) {
  if (file_size < 8 || head_size < 8) {
    reader.fail(
        detail::concat("it holds ", file_size, " bytes, less than the 8-byte header length"));
  }
  const uint64_t length = read_le64(head);
  if (length > file_size - 8) {
    reader.fail(detail::concat("its header length says ", length, " bytes, but only ",
                               file_size - 8, " follow (truncated, or not a safetensors file)"));
  }
  if (length > kMaxHeaderBytes) {
    reader.fail(detail::concat("its header length says ", length, " bytes, more than the ",
                               kMaxHeaderBytes, " the format allows"));
  }
  return length;
}

}  // namespace

const std::vector<SafetensorsDtype>& safetensors_dtypes() {
  static const std::vector<SafetensorsDtype> dtypes = {
      {"F64", c10::kDouble, 8},    {"F32", c10::kFloat, 4}, {"F16", c10::kHalf, 2},
      {"BF16", c10::kBFloat16, 2}, {"I64", c10::kLong, 8},  {"I32", c10::kInt, 4},
      {"I16", c10::kShort, 2},     {"I8", c10::kChar, 1},   {"U8", c10::kByte, 1},
      {"BOOL", c10::kBool, 1},
  };
  return dtypes;
}

SafetensorsHeader parse_safetensors_header(const unsigned char* head, uint64_t head_size,
                                           uint64_t file_size, const std::string& key,
                                           const std::string& path) {
  const HeaderReader reader(key, path);
  const uint64_t length = header_length(reader, head, head_size, file_size);
  UT_CHECK(head_size >= 8 + length, key, ": '", path, "': the header was not read whole");
  const char* begin = reinterpret_cast<const char*>(head) + 8;
  const json header = reader.parse(begin, begin + length);

  SafetensorsHeader out;
  out.data_offset = 8 + length;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      out.metadata = reader.metadata(value);
    } else {
      out.entries.push_back(reader.entry(name, value));
    }
  }
  std::sort(out.entries.begin(), out.entries.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
            });
  reader.check_layout(out.entries, file_size - out.data_offset);
  return out;
}

SafetensorsHeader read_safetensors_header(const std::string& path, const std::string& key) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  UT_CHECK(!ec, key, ": cannot read '", path, "': ", ec.message());
  std::ifstream in(path, std::ios::binary);
  UT_CHECK(in.good(), key, ": cannot open '", path, "'");
  unsigned char length_bytes[8] = {};
  in.read(reinterpret_cast<char*>(length_bytes), sizeof length_bytes);
  const HeaderReader reader(key, path);
  const uint64_t length = header_length(reader, length_bytes, uint64_t(in.gcount()), size);
  std::vector<unsigned char> head(8 + length);
  std::memcpy(head.data(), length_bytes, 8);
  in.read(reinterpret_cast<char*>(head.data() + 8), std::streamsize(length));
  UT_CHECK(uint64_t(in.gcount()) == length, key, ": cannot read the header of '", path, "'");
  return parse_safetensors_header(head.data(), head.size(), size, key, path);
}

}  // namespace unitrain
