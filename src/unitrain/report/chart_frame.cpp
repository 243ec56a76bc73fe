#include "unitrain/report/chart_frame.h"

#include <fmt/format.h>

#include "unitrain/report/html_text.h"

namespace unitrain::report {

std::string chart_axes_svg(const ChartFrame& f, const std::string& x_label,
                           const std::string& y_label) {
  using F = ChartFrame;
  std::string out;
  const double bottom = F::kHeight - F::kBottom, right = F::kWidth - F::kRight;
  for (size_t i = 0; i < f.y.values.size(); ++i) {
    const double y = f.py(f.y.values[i]);
    out += fmt::format(R"(<line class="grid" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)",
                       F::kLeft, y, right, y);
    out += fmt::format(R"(<text class="tick" x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)",
                       F::kLeft - 6, y + 4, html_escape(f.y.labels[i]));
  }
  for (size_t i = 0; i < f.x.values.size(); ++i) {
    const double x = f.px(f.x.values[i]);
    out += fmt::format(R"(<line class="axis" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)", x,
                       bottom, x, bottom + 5);
    out += fmt::format(R"(<text class="tick" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)",
                       x, bottom + 18, html_escape(f.x.labels[i]));
  }
  out += fmt::format(R"(<line class="axis" x1="{0:.1f}" y1="{1:.1f}" x2="{2:.1f}" y2="{1:.1f}"/>)",
                     F::kLeft, bottom, right);
  out += fmt::format(R"(<line class="axis" x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}"/>)",
                     F::kLeft, F::kTop, bottom);
  out += fmt::format(
      R"(<text class="axis-label" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)",
      (F::kLeft + right) / 2, F::kHeight - 6, html_escape(x_label));
  out +=
      fmt::format(R"svg(<text class="axis-label" transform="translate(14 {:.1f}) rotate(-90)" )svg"
                  R"(text-anchor="middle">{}</text>)",
                  (F::kTop + bottom) / 2, html_escape(y_label));
  return out;
}

}  // namespace unitrain::report
