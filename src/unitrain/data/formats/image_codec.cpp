#include "unitrain/data/formats/image_codec.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

// The most samples an image may hold (4 Gi): a corrupt header asking for more is an error,
// not an allocation failure.
constexpr uint64_t kMaxDecodedImageBytes = uint64_t{1} << 32;

// ---- PNG ----------------------------------------------------------------------------------

/// What libpng's callbacks see: the file in memory and the first error's message.
struct PngSource {
  const unsigned char* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  char message[256] = {};
};

/// What the setjmp frame writes: kept by its caller, so no value changed between setjmp and
/// longjmp lives in that frame (those would be indeterminate after the jump).
struct PngOutput {
  DecodedImage image;
  std::vector<png_bytep> rows;
};

void png_read_memory(png_structp png, png_bytep out, png_size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->pos) png_error(png, "the file is truncated");
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
}

// libpng's errors must not return: the message is kept and the decode jumps back to setjmp.
void png_fail(png_structp png, png_const_charp message) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->message, sizeof(src->message), "%s", message);
  png_longjmp(png, 1);
}

void png_ignore_warning(png_structp, png_const_charp) {}  // e.g. "iCCP: known incorrect sRGB"

/// libpng's read into `out` (the file's own channels after dropping alpha, 8 or 16 bits);
/// false with src.message on error. Only plain pointers live in this frame across setjmp,
/// and nothing with a destructor is made after it.
bool png_read_pixels(PngSource& src, PngOutput& out) {
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_fail, png_ignore_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    std::snprintf(src.message, sizeof(src.message), "libpng could not allocate its reader");
    png_destroy_read_struct(&png, nullptr, nullptr);
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, &src, png_read_memory);
  png_read_info(png, info);
  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  // Alpha channels and a palette's transparency (tRNS, which the palette's expansion turns into
  // an alpha channel) are dropped, as PIL's convert('RGB') / convert('L') do.
  png_set_strip_alpha(png);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (depth == 16) png_set_swap(png);  // PNG's samples are big-endian
#endif
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  DecodedImage& image = out.image;
  image.height = png_get_image_height(png, info);
  image.width = png_get_image_width(png, info);
  image.channels = png_get_channels(png, info);
  image.bits = png_get_bit_depth(png, info);
  const size_t row_bytes = png_get_rowbytes(png, info);
  if (static_cast<uint64_t>(row_bytes) * static_cast<uint64_t>(image.height) >
      kMaxDecodedImageBytes) {
    png_error(png, "the image is too large (more than 4 GiB of pixels)");
  }
  image.samples.resize(row_bytes * static_cast<size_t>(image.height));
  out.rows.resize(static_cast<size_t>(image.height));
  for (size_t y = 0; y < out.rows.size(); ++y) out.rows[y] = image.samples.data() + y * row_bytes;
  png_read_image(png, out.rows.data());
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

/// RGB to gray with PIL's weights (`Image.convert('L')`), in place; 8- or 16-bit samples.
template <typename Sample>
void png_rgb_to_gray(DecodedImage& image) {
  const int64_t pixels = image.height * image.width;
  auto* s = reinterpret_cast<Sample*>(image.samples.data());
  for (int64_t i = 0; i < pixels; ++i) {
    const uint64_t r = s[3 * i], g = s[3 * i + 1], b = s[3 * i + 2];
    s[i] = static_cast<Sample>((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16);
  }
  image.samples.resize(static_cast<size_t>(pixels) * sizeof(Sample));
  image.channels = 1;
}

/// Gray to RGB by copying each sample three times; 8- or 16-bit samples.
template <typename Sample>
void png_gray_to_rgb(DecodedImage& image) {
  const int64_t pixels = image.height * image.width;
  std::vector<unsigned char> rgb(static_cast<size_t>(pixels) * 3 * sizeof(Sample));
  const auto* g = reinterpret_cast<const Sample*>(image.samples.data());
  auto* out = reinterpret_cast<Sample*>(rgb.data());
  for (int64_t i = 0; i < pixels; ++i) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = g[i];
  image.samples = std::move(rgb);
  image.channels = 3;
}

DecodedImage decode_png(const std::string& bytes, int64_t channels, const std::string& what) {
  PngSource src;
  src.data = reinterpret_cast<const unsigned char*>(bytes.data());
  src.size = bytes.size();
  PngOutput out;
  if (!png_read_pixels(src, out)) {
    throw ConfigError(detail::concat(what, ": not a valid PNG file (libpng: ", src.message, ")"));
  }
  DecodedImage& image = out.image;
  const bool wide = image.bits == 16;
  if (image.channels == 3 && channels == 1)
    wide ? png_rgb_to_gray<uint16_t>(image) : png_rgb_to_gray<uint8_t>(image);
  if (image.channels == 1 && channels == 3)
    wide ? png_gray_to_rgb<uint16_t>(image) : png_gray_to_rgb<uint8_t>(image);
  return std::move(image);
}

// ---- JPEG ---------------------------------------------------------------------------------

/// A TurboJPEG decompressor for this thread: a handle must not be used by two threads at
/// once, and making one per image would cost more than small images take to decode. After a
/// failed call the handle is made anew: libjpeg's state after an error is not reset, and a
/// reused handle then misreads the next file's header (seen: a CMYK file read as another).
struct JpegDecompressor {
  tjhandle h = tjInitDecompress();
  ~JpegDecompressor() { reset(nullptr); }
  void reset(tjhandle next) {
    if (h) tjDestroy(h);
    h = next;
  }
};

JpegDecompressor& thread_jpeg_decompressor() {
  thread_local JpegDecompressor handle;
  if (!handle.h) handle.h = tjInitDecompress();
  return handle;
}

/// The decompressor's message, then a fresh decompressor for the next file.
std::string jpeg_error_and_reset(JpegDecompressor& d) {
  std::string message = tjGetErrorStr2(d.h);
  d.reset(tjInitDecompress());
  return message;
}

DecodedImage decode_jpeg(const std::string& bytes, int64_t channels, const std::string& what) {
  JpegDecompressor& decompressor = thread_jpeg_decompressor();
  tjhandle tj = decompressor.h;
  UT_CHECK(tj != nullptr, what, ": TurboJPEG could not make a decompressor (",
           tjGetErrorStr2(nullptr), ")");
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto size = static_cast<unsigned long>(bytes.size());
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(tj, data, size, &width, &height, &subsampling, &colorspace) != 0) {
    throw ConfigError(detail::concat(
        what, ": not a valid JPEG file (libjpeg-turbo: ", jpeg_error_and_reset(decompressor), ")"));
  }
  UT_CHECK(colorspace != TJCS_CMYK && colorspace != TJCS_YCCK, what,
           ": a CMYK JPEG, which image_folder does not decode; convert it to RGB (e.g. PIL's "
           "Image.open(f).convert('RGB').save(f))");
  UT_CHECK(
      static_cast<uint64_t>(width) * static_cast<uint64_t>(height) * 3 <= kMaxDecodedImageBytes,
      what, ": the image is too large (", width, " x ", height, " pixels)");
  DecodedImage image;
  image.height = height;
  image.width = width;
  image.channels = channels;
  image.samples.resize(static_cast<size_t>(width) * static_cast<size_t>(height) *
                       static_cast<size_t>(channels));
  const int format = channels == 1 ? TJPF_GRAY : TJPF_RGB;
  // Warnings (a truncated file, corrupt data) fail too: a damaged image is not trained on.
  if (tjDecompress2(tj, data, size, image.samples.data(), width, 0, height, format,
                    TJFLAG_STOPONWARNING) != 0) {
    throw ConfigError(detail::concat(what, ": cannot decode the JPEG file (libjpeg-turbo: ",
                                     jpeg_error_and_reset(decompressor), ")"));
  }
  return image;
}

}  // namespace

DecodedImage decode_image(const std::string& bytes, int64_t channels, const std::string& what) {
  UT_CHECK(channels == 1 || channels == 3, what, ": channels must be 1 or 3, got ", channels);
  static const unsigned char kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  static const unsigned char kJpeg[3] = {0xff, 0xd8, 0xff};
  UT_CHECK(!bytes.empty(), what, ": the file is empty");
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPng, 8) == 0) {
    return decode_png(bytes, channels, what);
  }
  if (bytes.size() >= 3 && std::memcmp(bytes.data(), kJpeg, 3) == 0) {
    return decode_jpeg(bytes, channels, what);
  }
  char start[3 * 8 + 1] = {};
  for (size_t i = 0; i < std::min<size_t>(8, bytes.size()); ++i) {
    std::snprintf(start + 3 * i, 4, "%02x ", static_cast<unsigned char>(bytes[i]));
  }
  throw ConfigError(detail::concat(what, ": neither a PNG nor a JPEG file (it starts with bytes ",
                                   std::string(start, std::strlen(start) - 1), ")"));
}

}  // namespace unitrain
