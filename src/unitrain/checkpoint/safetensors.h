#pragma once
// safetensors files: the format Hugging Face and most model zoos share weights in.
#include <map>
#include <string>

#include "unitrain/checkpoint/file_image.h"
#include "unitrain/checkpoint/named_tensors.h"

namespace unitrain {

/// A safetensors file is an 8-byte little-endian length N, then N bytes of JSON header
///   {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
///    "__metadata__": {"<key>": "<value>", ...}}
/// (offsets count from the byte after the header; the header may end in spaces), then the
/// tensors' raw little-endian bytes, which the offsets cover exactly: no overlap, no gap.
/// Dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL.
struct SafetensorsContent {
  NamedTensors tensors;                         ///< CPU tensors, in the order of their bytes
  std::map<std::string, std::string> metadata;  ///< the header's __metadata__ (may be empty)
};

/// Reads the safetensors file at `path`, mapped into memory: each tensor is allocated and
/// filled from the mapping, the file is never copied whole. ConfigError naming `key`, the path
/// and (where it is one tensor's fault) the tensor when the file is missing, truncated, its
/// header is not JSON or not of the format (wrong types, unknown dtype, a shape that does not
/// fit its offsets), or the offsets overlap, leave a gap or run past the end of the file.
SafetensorsContent read_safetensors(const std::string& path, const std::string& key);

/// True when `path` names a safetensors file: its name ends in `.safetensors`, or its first
/// bytes are a header length that fits the file followed by `{` (a PyTorch zip begins `PK`).
/// False for a missing or unreadable file (the reader then says what is wrong).
bool is_safetensors(const std::string& path);

/// `tensors` as a safetensors file: header keys sorted, padded with spaces to a multiple of 8
/// bytes, then each tensor's bytes in the header's order. The image points at the (contiguous,
/// CPU) tensors' memory; others are copied. ConfigError naming the tensor for a dtype the
/// format has no name for, a duplicate name, or the name `__metadata__`.
FileImage safetensors_image(const NamedTensors& tensors,
                            const std::map<std::string, std::string>& metadata = {});

/// Writes safetensors_image to `path` through a temporary file beside it, fsynced then renamed
/// over `path`: on any failure `path` is as it was and the temporary file is gone. TrainError
/// naming the path on an I/O failure.
void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace unitrain
