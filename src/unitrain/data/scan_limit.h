#pragma once
// kScanLimitBytes: how much data a dataset reads when built to find a value the config leaves out.
#include <cstdint>

namespace unitrain {

/// The most bytes a dataset reads when it is built to find a value its config does not declare:
/// the tokens' largest id (vocab_size) and an integer `y` array's largest label (num_classes).
/// Larger data needs the value declared, so that start-up does not grow with the data.
constexpr int64_t kScanLimitBytes = int64_t(64) << 20;

}  // namespace unitrain
