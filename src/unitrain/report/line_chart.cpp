#include "unitrain/report/line_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "unitrain/report/axis_ticks.h"
#include "unitrain/report/chart_frame.h"
#include "unitrain/report/html_text.h"

namespace unitrain::report {
namespace {

constexpr size_t kMaxMarkers = 60;
constexpr size_t kDrawAllBelow = 1000;

using Frame = ChartFrame;

/// A series' points where the chart's axes have them: y as log10(y) on a log axis (a value
/// <= 0 there becomes NaN, a break in the line).
std::vector<std::pair<double, double>> on_axes(const LineChart& chart, const ChartSeries& s) {
  if (!chart.log_y) return s.points;
  std::vector<std::pair<double, double>> out;
  out.reserve(s.points.size());
  for (const auto& [x, y] : s.points) out.emplace_back(x, y > 0 ? std::log10(y) : std::nan(""));
  return out;
}

Frame frame_of(const LineChart& chart) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& s : chart.series) {
    for (const auto& [x, y] : on_axes(chart, s)) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  if (x0 > x1) x0 = 0, x1 = 1, y0 = 0, y1 = 1;  // nothing finite to draw
  if (x0 >= 0) x0 = 0;  // steps count from 0: the chart shows where a run starts
  if (x0 == x1) x1 += 1;
  Frame f{axis_ticks(x0, x1, 6), axis_ticks(y0, y1, 5)};
  if (chart.log_y) {
    for (size_t i = 0; i < f.y.values.size(); ++i) {
      f.y.labels[i] = format_value(std::pow(10.0, f.y.values[i]));
    }
  }
  return f;
}

bool is_finite_point(const std::pair<double, double>& p) {
  return std::isfinite(p.first) && std::isfinite(p.second);
}

/// The points to draw: all of them, or for a long series the lowest and highest value of each
/// pixel column (in their order), which draws the same line from far fewer points.
std::vector<std::pair<double, double>> drawn_points(
    const Frame& f, const std::vector<std::pair<double, double>>& pts) {
  if (pts.size() <= kDrawAllBelow) return pts;
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < pts.size();) {
    if (!is_finite_point(pts[i])) {
      out.push_back(pts[i++]);  // keeps the break in the line
      continue;
    }
    const long column = std::lround(f.px(pts[i].first));
    size_t lo = i, hi = i, j = i;
    for (; j < pts.size() && is_finite_point(pts[j]) && std::lround(f.px(pts[j].first)) == column;
         ++j) {
      if (pts[j].second < pts[lo].second) lo = j;
      if (pts[j].second > pts[hi].second) hi = j;
    }
    out.push_back(pts[std::min(lo, hi)]);
    if (lo != hi) out.push_back(pts[std::max(lo, hi)]);
    i = j;
  }
  return out;
}

std::string series_svg(const Frame& f, const LineChart& chart, const ChartSeries& s) {
  const std::string& x_label = chart.x_label;
  const std::vector<std::pair<double, double>> points = on_axes(chart, s);
  std::string path, markers;
  bool pen_down = false;
  size_t finite = 0;
  for (const auto& p : points) finite += is_finite_point(p);
  for (const auto& [x, y] : drawn_points(f, points)) {
    if (!std::isfinite(x) || !std::isfinite(y)) {
      pen_down = false;
      continue;
    }
    path += fmt::format("{}{:.1f},{:.1f}", pen_down ? " L" : (path.empty() ? "M" : " M"), f.px(x),
                        f.py(y));
    pen_down = true;
    if (finite <= kMaxMarkers) {
      markers += fmt::format(
          R"(<circle cx="{:.1f}" cy="{:.1f}" r="2.6"><title>{} {} · {} {}: {}</title></circle>)",
          f.px(x), f.py(y), html_escape(s.run), html_escape(s.split), html_escape(x_label),
          format_value(x), format_value(chart.log_y ? std::pow(10.0, y) : y));
    }
  }
  const std::string dash = split_dash(s.split);
  return fmt::format(R"(<g class="series" data-series="{0} {1}" data-run="{0}" data-split="{1}" )"
                     R"(data-points="{2}" stroke="{3}" fill="{3}"><title>{0} {1}</title>)"
                     R"(<path d="{4}" fill="none"{5}/>{6}</g>)",
                     html_escape(s.run), html_escape(s.split), finite, html_escape(s.colour), path,
                     dash.empty() ? "" : R"( stroke-dasharray=")" + dash + "\"", markers);
}

}  // namespace

bool wants_log_y(const LineChart& chart) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& s : chart.series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      if (y <= 0) return false;
      lo = std::min(lo, y), hi = std::max(hi, y);
    }
  }
  return hi > 100 * lo;
}

std::string split_dash(const std::string& split) {
  if (split == "train") return "";
  if (split == "val") return "7 4";
  return "2 3";
}

std::string render_line_chart(const LineChart& chart) {
  const Frame f = frame_of(chart);
  std::string out = fmt::format(
      R"(<svg class="chart" data-chart="{}" viewBox="0 0 {} {}" role="img" aria-label="{}">)",
      html_escape(chart.id), Frame::kWidth, Frame::kHeight, html_escape(chart.title));
  out += chart_axes_svg(f, chart.x_label, chart.y_label + (chart.log_y ? " (log scale)" : ""));
  for (const auto& s : chart.series) out += series_svg(f, chart, s);
  out += "</svg>";
  return out;
}

}  // namespace unitrain::report
