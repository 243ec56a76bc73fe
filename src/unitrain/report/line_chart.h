#pragma once
// A line chart as inline SVG: axes with ticks and labels, one line per series, with no script.
#include <string>
#include <utility>
#include <vector>

namespace unitrain::report {

/// One line of a chart: a run's values of one split, (x, y) in x order. Non-finite values break
/// the line.
struct ChartSeries {
  std::string run;     ///< the run's label (data-run)
  std::string split;   ///< "train", "val", "test", or "" (data-split)
  std::string colour;  ///< CSS colour, e.g. "#4e79a7"
  std::vector<std::pair<double, double>> points;
};

/// What a chart shows. `id` names it in the page (data-chart); the rest is shown text.
struct LineChart {
  std::string id, title, x_label, y_label;
  std::vector<ChartSeries> series;
  /// The y axis is logarithmic (report_charts sets it where wants_log_y); a value <= 0 then
  /// breaks the line as a non-finite one does.
  bool log_y = false;
};

/// True when a chart's values read better on a log y axis: every finite y is above 0 and the
/// largest is more than 100 times the smallest (a loss falling over two decades, or one
/// outlier that would flatten the rest of the curve onto the axis).
bool wants_log_y(const LineChart& chart);

/// The chart as an <svg> element (escaped text; scales to its container's width). Each series
/// is a <g class="series" data-run=... data-split=...> holding its line and, when it has few
/// points, a marker per point whose tooltip gives x and y. Train lines are solid, val dashed,
/// others dotted. A log y axis labels its ticks with the values (0.01, 0.1, 1) and says
/// "(log scale)" after the y label.
std::string render_line_chart(const LineChart& chart);

/// The dash pattern of a split's lines ("" for solid), shared with the legends.
std::string split_dash(const std::string& split);

}  // namespace unitrain::report
