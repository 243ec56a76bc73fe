#pragma once
// The header of a safetensors file, read and checked without reading a tensor: what the file
// holds (names, dtypes, shapes, where each tensor's bytes lie), for the reader of its tensors
// and for checks that need only the shapes (a config.json against its weights).
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace unitrain {

/// A dtype the format names: "F32" is torch::kFloat32 of 4 bytes.
struct SafetensorsDtype {
  const char* name;
  c10::ScalarType dtype;
  size_t size;
};
/// Every dtype the format names that unitrain reads: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL.
const std::vector<SafetensorsDtype>& safetensors_dtypes();

/// One tensor of the header.
struct SafetensorsEntry {
  std::string name;
  const SafetensorsDtype* dtype = nullptr;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  ///< its bytes, counted from the first byte after the header
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;        ///< in the order of their bytes
  std::map<std::string, std::string> metadata;  ///< __metadata__ (may be empty)
  uint64_t data_offset = 0;                     ///< where the tensors' bytes begin in the file
};

/// The header of a file of `file_size` bytes whose first bytes are `head` (at least the
/// header, or all of a shorter file; `head_size` of them). ConfigError "`key`: '`path`' is not a
/// valid safetensors file: ..." naming the tensor at fault, for a file shorter than its header
/// says, a header that is not JSON or not of the format (wrong types, an unknown dtype, a
/// name given twice, a shape that does not fit its offsets), or offsets that overlap, leave a
/// gap or run past the end of the file. Quoted values are cut short.
SafetensorsHeader parse_safetensors_header(const unsigned char* head, uint64_t head_size,
                                           uint64_t file_size, const std::string& key,
                                           const std::string& path);

/// The header of the file at `path`, reading its first bytes only. ConfigError as above, or
/// naming `key` and the path when the file cannot be read.
SafetensorsHeader read_safetensors_header(const std::string& path, const std::string& key);

}  // namespace unitrain
