#pragma once
// Values in PyTorch's own file format (what `torch.save` writes): written straight from the
// tensors' memory, read back with the tensors in place in the bytes read.
#include <memory>
#include <string>
#include <vector>

#include "unitrain/checkpoint/checkpoint_store.h"

namespace c10 {
struct IValue;
}

namespace unitrain {

/// `value` (a dict of tensors, or any value LibTorch's pickler takes) as a file `torch.load` in
/// Python and `torch::pickle_load` read: a zip archive (stored, not compressed) holding
/// archive/data.pkl (the pickle, tensors as persistent storage ids), archive/data/<i> (each
/// storage's bytes, 64-byte aligned as PyTorch aligns them) and archive/version.
///
/// Unlike `torch::pickle_save`, nothing is copied: the image's pieces point at the tensors'
/// own storage (kept alive by the image), and the record and whole-file CRC-32s are computed
/// in one pass over the bytes. CPU tensors only are referenced; others are copied to the CPU.
/// Archives past 4 GiB (or with more than 65534 records) use the zip64 extensions;
/// `force_zip64` uses them always (for tests).
FileImage encode_torch_file(const c10::IValue& value, bool force_zip64 = false);

/// The value in a file PyTorch's format (encode_torch_file's, or Python's `torch.save`) whose
/// bytes are `bytes`, unpickled in place: each tensor's storage is its record inside `bytes`
/// (kept alive by the tensors), not a copy. Records that are compressed or not aligned for
/// their tensors are copied. Throws (ConfigError or TrainError, naming `what`) when the bytes
/// are not such a file, its pickle does not unpickle (LibTorch's words are not passed on), or a
/// tensor's sizes, strides and offset reach past its storage (naming the tensor by its keys).
c10::IValue decode_torch_file(const std::shared_ptr<const std::vector<char>>& bytes,
                              const std::string& what);
/// decode_torch_file of `size` bytes at `bytes` (a mapped file), which `keep` keeps alive: the
/// tensors are views of that memory (read-only when it is: copy before writing to them).
c10::IValue decode_torch_file(const char* bytes, size_t size,
                              const std::shared_ptr<const void>& keep, const std::string& what);

}  // namespace unitrain
