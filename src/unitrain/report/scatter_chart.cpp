#include "unitrain/report/scatter_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "unitrain/report/chart_frame.h"
#include "unitrain/report/html_text.h"

namespace unitrain::report {
namespace {

bool drawable(const ScatterChart& chart, const ScatterPoint& p) {
  return std::isfinite(p.x) && std::isfinite(p.y) && (!chart.log_x || p.x > 0);
}

/// Where a point's x lies on the axis: log10(x) on a log axis.
double axis_x(const ScatterChart& chart, double x) { return chart.log_x ? std::log10(x) : x; }

ChartFrame scatter_frame(const ScatterChart& chart) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& p : chart.points) {
    if (!drawable(chart, p)) continue;
    const double x = axis_x(chart, p.x);
    x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
  }
  if (x0 > x1) x0 = 0, x1 = 1, y0 = 0, y1 = 1;  // nothing finite to draw
  ChartFrame f{axis_ticks(x0, x1, 6), axis_ticks(y0, y1, 5)};
  if (chart.log_x) {
    for (size_t i = 0; i < f.x.values.size(); ++i) {
      f.x.labels[i] = format_value(std::pow(10.0, f.x.values[i]));
    }
  }
  return f;
}

}  // namespace

std::string render_scatter_chart(const ScatterChart& chart) {
  const ChartFrame f = scatter_frame(chart);
  std::string out = fmt::format(
      R"(<svg class="chart scatter" data-chart="{}" viewBox="0 0 {} {}" role="img" )"
      R"(aria-label="{}">)",
      html_escape(chart.id), ChartFrame::kWidth, ChartFrame::kHeight, html_escape(chart.title));
  out += chart_axes_svg(f, chart.x_label, chart.y_label);
  for (const auto& p : chart.points) {
    if (!drawable(chart, p)) continue;
    out += fmt::format(R"(<circle data-point="{0}" cx="{1:.1f}" cy="{2:.1f}" r="4" fill="{3}" )"
                       R"(fill-opacity="0.8"><title>{0}: {4} {5}, {6} {7}</title></circle>)",
                       html_escape(p.label), f.px(axis_x(chart, p.x)), f.py(p.y),
                       html_escape(p.colour), html_escape(chart.x_label), format_value(p.x),
                       html_escape(chart.y_label), format_value(p.y));
  }
  return out + "</svg>";
}

}  // namespace unitrain::report
