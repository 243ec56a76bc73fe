#include "unitrain/report/report_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

namespace unitrain::report {
namespace {

/// "train/loss" -> {"train", "loss"}; a key without a split ("lr") -> {"", "lr"}.
std::pair<std::string, std::string> split_and_name(const std::string& key) {
  const auto slash = key.find('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

int split_rank(const std::string& split) {
  static const std::array<const char*, 3> order = {"train", "val", "test"};
  const auto it = std::find(order.begin(), order.end(), split);
  return static_cast<int>(it - order.begin());
}

/// Metric names: loss first, the learning rate last, the others by name between.
bool chart_before(const std::string& a, const std::string& b) {
  const auto rank = [](const std::string& n) { return n == "loss" ? 0 : n == "lr" ? 2 : 1; };
  return rank(a) != rank(b) ? rank(a) < rank(b) : a < b;
}

bool has_finite(const ChartSeries& s) {
  return std::any_of(s.points.begin(), s.points.end(), [](const auto& p) {
    return std::isfinite(p.first) && std::isfinite(p.second);
  });
}

/// An event of validation or test metrics only (val/..., test/...).
bool evaluation_only(const MetricEvent& e) {
  return !e.values.empty() && std::all_of(e.values.begin(), e.values.end(), [](const auto& kv) {
    return kv.first.rfind("val/", 0) == 0 || kv.first.rfind("test/", 0) == 0;
  });
}

}  // namespace

std::string run_colour(size_t index) {
  // Tableau 10: distinct hues that stay apart for most colour-blind readers.
  static const std::array<const char*, 10> colours = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                      "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                      "#9c755f", "#bab0ac"};
  if (index < colours.size()) return colours[index];
  // Runs 10 to 19: the same hues darker (60% of each channel), so that run 10 is never run 0.
  if (index < 2 * colours.size()) {
    const unsigned rgb = std::stoul(colours[index % colours.size()] + 1, nullptr, 16);
    const auto darker = [&](int shift) { return ((rgb >> shift) & 0xff) * 3 / 5; };
    return fmt::format("#{:02x}{:02x}{:02x}", darker(16), darker(8), darker(0));
  }
  // Beyond: hues a golden angle apart, at two lightnesses, none the same as another run's.
  return fmt::format("hsl({:.1f}, 65%, {}%)", std::fmod(static_cast<double>(index) * 137.508, 360),
                     index % 2 ? 35 : 55);
}

std::vector<std::pair<double, double>> throughput_points(const std::vector<MetricEvent>& events) {
  std::vector<std::pair<double, double>> out;
  int64_t samples = 0;
  double time = 0;
  for (const auto& e : events) {
    if (e.samples > samples && e.time > time && !evaluation_only(e)) {
      out.emplace_back(double(e.step), double(e.samples - samples) / (e.time - time));
    }
    // Every event starts the next interval: an evaluation event (logged when its pass ended)
    // takes the pass out of the next interval and gives no point itself, as the interval before
    // it holds the pass; a restart (fewer samples) begins anew.
    samples = e.samples;
    time = e.time;
  }
  return out;
}

std::vector<LineChart> report_charts(const std::vector<RunData>& runs) {
  // metric name -> split -> run index -> points
  std::map<std::string, std::map<std::string, std::map<size_t, ChartSeries>>> by_name;
  for (size_t r = 0; r < runs.size(); ++r) {
    for (const auto& e : runs[r].events) {
      for (const auto& [key, value] : e.values) {
        const auto [split, name] = split_and_name(key);
        ChartSeries& s = by_name[name][split][r];
        s.points.emplace_back(double(e.step), value);
      }
    }
  }
  std::vector<std::string> names;
  for (const auto& kv : by_name) names.push_back(kv.first);
  std::sort(names.begin(), names.end(), chart_before);

  std::vector<LineChart> charts;
  for (const auto& name : names) {
    LineChart c;
    c.id = name;
    c.title = name == "lr" ? "learning rate" : name;
    c.x_label = "step";
    c.y_label = name;
    std::vector<std::string> splits;
    for (const auto& kv : by_name[name]) splits.push_back(kv.first);
    std::stable_sort(splits.begin(), splits.end(), [](const std::string& a, const std::string& b) {
      return split_rank(a) < split_rank(b);
    });
    for (size_t r = 0; r < runs.size(); ++r) {
      for (const auto& split : splits) {
        auto& runs_of_split = by_name[name][split];
        const auto it = runs_of_split.find(r);
        if (it == runs_of_split.end()) continue;
        ChartSeries s = std::move(it->second);
        s.run = runs[r].label;
        s.split = split;
        s.colour = run_colour(r);
        if (has_finite(s)) c.series.push_back(std::move(s));
      }
    }
    c.log_y = wants_log_y(c);
    if (!c.series.empty()) charts.push_back(std::move(c));
  }

  LineChart speed{"throughput", "throughput", "step", "samples/s", {}};
  for (size_t r = 0; r < runs.size(); ++r) {
    ChartSeries s{runs[r].label, "train", run_colour(r), throughput_points(runs[r].events)};
    if (has_finite(s)) speed.series.push_back(std::move(s));
  }
  if (!speed.series.empty()) charts.push_back(std::move(speed));
  return charts;
}

}  // namespace unitrain::report
