#include "unitrain/report/axis_ticks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace unitrain::report {
namespace {

/// 1, 2, 2.5 or 5 times a power of ten, the smallest not below `raw`.
double round_step(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * magnitude >= raw * (1 - 1e-9)) return m * magnitude;
  }
  return 10 * magnitude;
}

std::string tick_label(double v, double step) {
  const double big = std::max(std::fabs(v), step);
  if (big >= 1e6 || step < 1e-5) return fmt::format("{:g}", v);
  // Enough decimals to tell ticks `step` apart (2.5 needs one more than its power of ten).
  int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  if (std::fabs(std::round(step * std::pow(10.0, decimals)) - step * std::pow(10.0, decimals)) >
      1e-6) {
    ++decimals;
  }
  return fmt::format("{:.{}f}", v, decimals);
}

}  // namespace

AxisTicks axis_ticks(double min, double max, int target) {
  AxisTicks axis;
  if (!std::isfinite(min) || !std::isfinite(max) || min > max) {
    min = 0;
    max = 1;
  }
  if (min == max) {
    const double pad = min == 0 ? 1.0 : std::fabs(min) * 0.1;
    min -= pad;
    max += pad;
  }
  const double step = round_step((max - min) / std::max(1, target));
  axis.lo = std::floor(min / step + 1e-9) * step;
  axis.hi = std::ceil(max / step - 1e-9) * step;
  const auto count = static_cast<int>(std::llround((axis.hi - axis.lo) / step));
  for (int i = 0; i <= count; ++i) {
    double v = axis.lo + i * step;
    if (std::fabs(v) < step * 1e-9) v = 0;  // no "-0.0"
    axis.values.push_back(v);
    axis.labels.push_back(tick_label(v, step));
  }
  return axis;
}

}  // namespace unitrain::report
