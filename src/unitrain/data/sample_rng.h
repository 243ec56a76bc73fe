#pragma once
// SampleRng: the random numbers of one example in one epoch, a pure function of (seed, epoch,
// index).
#include <cstdint>

#include "unitrain/data/dataset.h"

namespace unitrain {

/// A splitmix64 stream seeded by (seed, epoch, example index): the same numbers on every
/// platform, in any loader thread, for any number of threads or processes, and after a resume.
/// Transforms of one example draw from it in pipeline order; the collate function continues it.
class SampleRng {
 public:
  SampleRng(const ReadContext& context, int64_t index);

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1), 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double low, double high) { return low + (high - low) * uniform(); }
  /// Uniform integer in [low, high] (inclusive).
  int64_t integer(int64_t low, int64_t high) {
    const auto span = static_cast<double>(high - low + 1);
    const auto k = static_cast<int64_t>(uniform() * span);
    return low + (k > high - low ? high - low : k);
  }
  bool chance(double p) { return uniform() < p; }

 private:
  uint64_t state_;
};

}  // namespace unitrain
