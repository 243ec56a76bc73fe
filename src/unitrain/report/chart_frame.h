#pragma once
// ChartFrame: the drawing area, axes and labels the report's charts share (line and scatter).
#include <string>

#include "unitrain/report/axis_ticks.h"

namespace unitrain::report {

/// A chart's coordinate system: the SVG's viewBox (the page scales it), the plot area inside
/// the margins, and the axes' ranges and ticks.
struct ChartFrame {
  static constexpr double kWidth = 560, kHeight = 300;
  static constexpr double kLeft = 66, kRight = 14, kTop = 12, kBottom = 44;

  AxisTicks x, y;
  /// The drawing's x of value `v` (within x's range).
  double px(double v) const {
    return kLeft + (v - x.lo) / (x.hi - x.lo) * (kWidth - kLeft - kRight);
  }
  /// The drawing's y of value `v` (within y's range; up is larger).
  double py(double v) const {
    return kHeight - kBottom - (v - y.lo) / (y.hi - y.lo) * (kHeight - kTop - kBottom);
  }
};

/// The frame's grid lines, ticks with their labels, both axes and the axes' labels, as SVG
/// elements (escaped text).
std::string chart_axes_svg(const ChartFrame& f, const std::string& x_label,
                           const std::string& y_label);

}  // namespace unitrain::report
