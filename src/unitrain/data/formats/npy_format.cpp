#include "unitrain/data/formats/npy_format.h"

#include <cctype>
#include <cstring>
#include <string_view>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr const char* kSupported =
    "b1, i1, u1, i2, u2, i4, u4, i8, u8, f2, f4, f8, and strings U<n>, S<n> as class names";

/// Reads the header dict, a Python literal such as
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`.
class HeaderDictReader {
 public:
  HeaderDictReader(std::string_view text, const std::string& where) : text_(text), where_(where) {}

  void read_into(NpyHeader& out) {
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (!accept('}')) {
      const std::string key = read_string();
      expect(':');
      if (key == "descr") {
        out.dtype = read_descr();
        has_descr = true;
      } else if (key == "fortran_order") {
        out.fortran_order = read_bool();
        has_order = true;
      } else if (key == "shape") {
        out.shape = read_shape();
        has_shape = true;
      } else {
        fail(detail::concat("unexpected key '", key, "'"));
      }
      if (!accept(',')) {
        expect('}');
        break;
      }
    }
    if (!has_descr || !has_order || !has_shape) {
      fail("it lacks one of 'descr', 'fortran_order' and 'shape'");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(detail::concat(where_, ": the .npy header '", text_, "' cannot be read: ",
                                     what, " (is the file damaged? save it again with np.save)"));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail(detail::concat("expected '", c, "' at character ", pos_));
  }
  std::string read_string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"')
      fail(detail::concat("expected a string at character ", pos_));
    const size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail("a string is not closed");
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return s;
  }
  std::string read_word() {
    skip_space();
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }
  bool read_bool() {
    const std::string word = read_word();
    if (word != "True" && word != "False") {
      fail(detail::concat("fortran_order is '", word, "', not True or False"));
    }
    return word == "True";
  }
  std::vector<int64_t> read_shape() {
    std::vector<int64_t> shape;
    expect('(');
    while (!accept(')')) {
      std::string word = read_word();
      if (!word.empty() && word.back() == 'L') word.pop_back();  // Python 2's long integers
      if (word.empty() || word.find_first_not_of("0123456789") != std::string::npos ||
          word.size() > 18) {
        fail(detail::concat("the shape holds '", word, "', not a dimension"));
      }
      shape.push_back(std::stoll(word));
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }
  NpyDtype read_descr() {
    if (peek() == '[') {
      const size_t end = text_.find(']', pos_);
      throw ConfigError(detail::concat(
          where_, ": holds a structured (record) array, dtype ",
          text_.substr(pos_, end == std::string_view::npos ? end : end - pos_ + 1),
          "; unitrain reads arrays of one numeric or boolean type: save each field as an array "
          "of its own, e.g. np.savez(path, a=arr['a'], b=arr['b'])"));
    }
    NpyDtype d;
    d.descr = read_string();
    const std::string& s = d.descr;
    if (s.size() >= 2 && s[1] == 'O') {
      throw ConfigError(
          detail::concat(where_, ": holds Python objects (dtype '", s,
                         "'), which only Python can read; save a numeric array instead, e.g. "
                         "np.save(path, np.asarray(arr, dtype=np.float32))"));
    }
    const bool known_order = !s.empty() && std::strchr("<>|=", s[0]) != nullptr;
    // Strings of n characters: 'U' UTF-32 code units (4n bytes), 'S' bytes (n).
    if (known_order && s.size() >= 3 && (s[1] == 'U' || s[1] == 'S') &&
        s.find_first_not_of("0123456789", 2) == std::string::npos && s.size() <= 8) {
      const int n = std::stoi(s.substr(2));
      d.kind = s[1];
      d.itemsize = d.kind == 'U' ? 4 * n : n;
      d.big_endian = s[0] == '>';
      if (n > 0) return d;
    }
    if (known_order && s.size() == 3 && std::strchr("biuf", s[1]) != nullptr &&
        std::strchr("1248", s[2]) != nullptr) {
      d.kind = s[1];
      d.itemsize = s[2] - '0';
      d.big_endian = s[0] == '>';
      const bool ok = d.kind == 'b' ? d.itemsize == 1 : d.kind != 'f' || d.itemsize >= 2;
      if (ok) return d;
    }
    throw ConfigError(detail::concat(
        where_, ": its dtype '", s, "' is not supported (supported: ", kSupported,
        ", little- or big-endian); convert it before saving, e.g. arr.astype(np.float32)"));
  }

  std::string_view text_;
  const std::string& where_;
  size_t pos_ = 0;
};

uint32_t little_endian(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::string numpy_shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

NpyHeader parse_npy_header(const unsigned char* bytes, size_t size, const std::string& where) {
  UT_CHECK(size >= kMagicSize && std::memcmp(bytes, kMagic, kMagicSize) == 0, where,
           ": not a .npy file (it does not start with NumPy's magic string \\x93NUMPY); write "
           "arrays with np.save or np.savez");
  UT_CHECK(size >= kMagicSize + 4, where, ": truncated inside its .npy header (", size, " bytes)");
  const int major = bytes[6];
  UT_CHECK(major >= 1 && major <= 3, where, ": .npy format version ", major, ".", int{bytes[7]},
           " is not supported (1.0, 2.0 and 3.0 are); save it again with np.save");
  const int length_bytes = major == 1 ? 2 : 4;
  const size_t header_start = kMagicSize + 2 + length_bytes;
  UT_CHECK(size >= header_start, where, ": truncated inside its .npy header");
  const size_t header_size = little_endian(bytes + kMagicSize + 2, length_bytes);
  UT_CHECK(size >= header_start + header_size, where, ": truncated inside its .npy header (", size,
           " bytes, the header ends at byte ", header_start + header_size, ")");
  NpyHeader h;
  h.data_offset = header_start + header_size;
  const std::string_view text(reinterpret_cast<const char*>(bytes) + header_start, header_size);
  HeaderDictReader(text.substr(0, text.find_last_not_of(" \n") + 1), where).read_into(h);
  uint64_t bytes_needed = static_cast<uint64_t>(h.dtype.itemsize);
  for (int64_t d : h.shape) {
    UT_CHECK(!__builtin_mul_overflow(bytes_needed, static_cast<uint64_t>(d), &bytes_needed), where,
             ": shape ", numpy_shape_text(h.shape), " is too large");
  }
  h.data_bytes = bytes_needed;
  const uint64_t available = size - h.data_offset;
  UT_CHECK(available >= h.data_bytes, where, ": truncated: shape ", numpy_shape_text(h.shape),
           " of '", h.dtype.descr, "' needs ", h.data_bytes, " bytes of data, the file holds ",
           available, "; copy or save it again");
  return h;
}

}  // namespace unitrain
