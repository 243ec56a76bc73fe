#pragma once
// TrainUnit: one syntax for every period in the config: "10 epochs", "500 steps", "20000 samples".
#include <cstdint>
#include <string>

namespace unitrain {

/// A length of training measured in epochs, optimizer steps or samples (Determined's
/// Epoch/Batch/Record). Accepted spellings: `10 epochs`, `1 epoch`, `10ep`, `500 steps`,
/// `500 step`, `500st`, `20000 samples`, `20000 sample`, `20000sa`; epochs also as a decimal
/// fraction (`0.5 epochs`, `2.25ep`: Lightning's val_check_interval), held as count / per.
struct TrainUnit {
  enum class Unit { Epochs, Steps, Samples };
  int64_t count = 0;
  Unit unit = Unit::Epochs;
  int64_t per = 1;  ///< epochs only: the length is count / per epochs (0.5 epochs = 1 / 2)

  static TrainUnit epochs(int64_t n) { return {n, Unit::Epochs}; }
  static TrainUnit steps(int64_t n) { return {n, Unit::Steps}; }
  static TrainUnit samples(int64_t n) { return {n, Unit::Samples}; }

  /// Parses `text`; throws ConfigError naming `key` and the accepted forms.
  static TrainUnit parse(const std::string& text, const std::string& key = "duration");
  /// Canonical form, e.g. "10 epochs", "1 step", "0.5 epochs".
  std::string str() const;
  /// A fraction of an epoch, or whole epochs and a fraction (per > 1).
  bool fractional() const { return per != 1; }
  bool operator==(const TrainUnit& o) const {
    return count == o.count && unit == o.unit && per == o.per;
  }
};

}  // namespace unitrain
