#pragma once
// Record signatures and limits of the zip format (PKWARE's APPNOTE), shared by the zip writer
// of checkpoints (PyTorch's file format) and the zip reader of .npz archives.
#include <cstdint>

namespace unitrain::zip {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfCentral = 0x06054b50;
constexpr uint32_t kZip64EndOfCentral = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint16_t kZip64Extra = 0x0001;  ///< extra field id: 64-bit sizes and offset
constexpr uint64_t kMax32 = 0xffffffffu;  ///< a 32-bit field of this value is in the ZIP64 extra
constexpr uint64_t kMax16 = 0xffffu;

}  // namespace unitrain::zip
