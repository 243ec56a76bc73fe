#pragma once
// Decoding PNG (libpng) and JPEG (libjpeg-turbo's TurboJPEG API) files held in memory.
#include <cstdint>
#include <string>
#include <vector>

namespace unitrain {

/// The pixels of a decoded image: `height` rows of `width` pixels of `channels` interleaved
/// samples (1: gray; 3: red, green, blue), each of `bits` bits: 8 (one byte) or 16 (two bytes
/// in the machine's byte order; 16-bit PNGs only).
struct DecodedImage {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
  int bits = 8;
  std::vector<unsigned char> samples;
};

/// Decodes the PNG or JPEG file `bytes` (the format is read from its first bytes, not from
/// its name) into `channels` channels (1 or 3). PNG: palettes expanded, gray of 1, 2 and 4
/// bits widened to 8, 16 bits kept, alpha and transparency dropped; RGB to gray with PIL's
/// weights (L = (19595 R + 38470 G + 7471 B + 2^15) >> 16, `Image.convert('L')`), gray to
/// RGB by copying. JPEG: libjpeg's accurate DCT and smooth upsampling (PIL's decode), gray
/// output is the JPEG's own luma. Safe to call from several threads at once (a TurboJPEG
/// handle per thread, a libpng reader per call). ConfigError "`what`: <reason>" for a file
/// that is neither format, a CMYK JPEG, or one the library refuses (its message quoted; a
/// truncated or corrupt file, libjpeg's warnings included).
DecodedImage decode_image(const std::string& bytes, int64_t channels, const std::string& what);

}  // namespace unitrain
