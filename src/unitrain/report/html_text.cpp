#include "unitrain/report/html_text.h"

#include <fmt/format.h>

#include <cmath>

namespace unitrain::report {

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  const double a = std::fabs(v);
  if (a != 0 && (a >= 1e5 || a < 1e-4)) return fmt::format("{:.4g}", v);
  if (a >= 1000) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  if (seconds < 10) return fmt::format("{:.2f} s", seconds);
  if (seconds < 60) return fmt::format("{:.1f} s", seconds);
  const auto whole = static_cast<int64_t>(std::llround(seconds));
  if (whole < 3600) return fmt::format("{} min {:02d} s", whole / 60, whole % 60);
  return fmt::format("{} h {:02d} min", whole / 3600, (whole % 3600) / 60);
}

}  // namespace unitrain::report
