#pragma once
// A scatter chart as inline SVG, in the line charts' style: one marker per point, no lines.
#include <string>
#include <vector>

namespace unitrain::report {

struct ScatterPoint {
  double x = 0, y = 0;
  std::string label;   ///< the point's name in its tooltip and data-point, e.g. "trial 3"
  std::string colour;  ///< CSS colour
};

/// What a scatter chart shows. `log_x`: the x axis is logarithmic (every x must be > 0).
struct ScatterChart {
  std::string id, title, x_label, y_label;
  bool log_x = false;
  std::vector<ScatterPoint> points;
};

/// The chart as an <svg class="chart" data-chart=id> with a <circle data-point=label> per
/// finite point, its tooltip giving the label, x and y. Axes as the line charts' (chart_frame.h);
/// a log axis labels its ticks with the values themselves (1e-4, 0.001, ...).
std::string render_scatter_chart(const ScatterChart& chart);

}  // namespace unitrain::report
