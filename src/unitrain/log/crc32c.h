#pragma once
// CRC-32C (Castagnoli), the checksum of TFRecord framing (TensorBoard's event files).
#include <cstddef>
#include <cstdint>

namespace unitrain {

/// CRC-32C of `size` bytes at `data` (reflected polynomial 0x82F63B78, initial value and final
/// XOR 0xFFFFFFFF; crc32c("123456789") == 0xE3069283). `crc` continues an earlier checksum:
/// crc32c(b, nb, crc32c(a, na)) == crc32c of a followed by b.
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

/// The checksum as TFRecord stores it: ((crc >> 15) | (crc << 17)) + 0xa282ead8, so that a
/// CRC of data that holds CRCs does not degenerate.
uint32_t masked_crc32c(const void* data, size_t size);

}  // namespace unitrain
