#pragma once
// The .npy file format (NumPy's np.save): the header that says how the array's bytes are laid out.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace unitrain {

/// An element type of a .npy array, from its header's `descr` ('<f4', '|b1', '>i8').
struct NpyDtype {
  /// 'b' bool, 'i' signed integer, 'u' unsigned integer, 'f' float; 'U' text (UTF-32 code
  /// units), 'S' bytes: strings of fixed width, read as class names (npy_dataset.h)
  char kind = 'f';
  int itemsize = 4;         ///< bytes per element: 1, 2, 4 or 8; a string's width in bytes
  bool big_endian = false;  ///< '>' in descr (one-byte types are never swapped)
  std::string descr;        ///< as written in the header, for messages
};

/// What a .npy header says about the array that follows it.
struct NpyHeader {
  NpyDtype dtype;
  std::vector<int64_t> shape;
  bool fortran_order = false;  ///< column-major (the first index varies fastest)
  size_t data_offset = 0;      ///< bytes from the start of the .npy to its first element
  uint64_t data_bytes = 0;     ///< the elements' bytes: product of shape * itemsize
};

/// Parses the .npy held in `bytes` (`size` bytes: a mapped file or an npz member): the magic
/// string, version 1, 2 or 3, and the header dict's `descr`, `fortran_order` and `shape`.
/// Accepts little-endian ('<'), big-endian ('>') and byte ('|') types b1, i1, u1, i2, u2, i4,
/// u4, i8, u8, f2, f4, f8, and strings U<n> (text) and S<n> (bytes). ConfigError naming `where`
/// and the bad value, with a fix, when it is
/// not a .npy, holds Python objects, a structured (record) type or another unsupported type,
/// or is shorter than its shape needs (truncated).
NpyHeader parse_npy_header(const unsigned char* bytes, size_t size, const std::string& where);

/// "(60000, 28, 28)": a shape as NumPy prints it.
std::string numpy_shape_text(const std::vector<int64_t>& shape);

}  // namespace unitrain
