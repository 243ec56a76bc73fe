#pragma once
// Axis ranges with round tick values (1, 2, 2.5 or 5 times a power of ten) for the report's charts.
#include <string>
#include <vector>

namespace unitrain::report {

/// An axis: its shown range [lo, hi] and the tick values in it, each with its label.
struct AxisTicks {
  double lo = 0, hi = 1;
  std::vector<double> values;
  std::vector<std::string> labels;  ///< same count as values, all with the same decimals
};

/// Ticks covering [min, max] with about `target` intervals; the range is widened to the ticks
/// enclosing the data. A single value (min == max) gets a range around it; non-finite bounds
/// give [0, 1].
AxisTicks axis_ticks(double min, double max, int target = 5);

}  // namespace unitrain::report
