#include "unitrain/report/sweep_report.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "unitrain/core/error.h"
#include "unitrain/report/html_text.h"
#include "unitrain/report/json_read.h"
#include "unitrain/report/report_charts.h"
#include "unitrain/report/scatter_chart.h"

namespace unitrain::report {
namespace {

namespace fs = std::filesystem;

/// The number a parameter's YAML text holds, or none.
std::optional<double> number_of(const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

/// The folder of trial `index`: the trial-<k> name whose number is `index` (k zero-padded).
std::string trial_dir(const std::string& sweep_dir, int64_t index) {
  for (const auto& entry : fs::directory_iterator(sweep_dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("trial-", 0) != 0 || !entry.is_directory()) continue;
    if (number_of(name.substr(6)) == static_cast<double>(index)) return entry.path().string();
  }
  return "";
}

std::string parameter_chart(const SweepData& sweep, size_t p, std::vector<std::string>& colours) {
  ScatterChart chart;
  chart.id = "sweep:" + sweep.trials.front().parameters[p].first;
  chart.title = sweep.metric + " against " + sweep.trials.front().parameters[p].first;
  chart.x_label = sweep.trials.front().parameters[p].first;
  chart.y_label = sweep.metric;
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < sweep.trials.size(); ++i) {
    const SweepTrial& t = sweep.trials[i];
    const auto x = number_of(t.parameters[p].second);
    if (!x) return "";  // not a numeric parameter
    if (!t.metric) continue;
    lo = std::min(lo, *x), hi = std::max(hi, *x);
    chart.points.push_back({*x, *t.metric, fmt::format("trial {}", t.index), colours[i]});
  }
  const auto scale = sweep.scales.find(sweep.trials.front().parameters[p].first);
  chart.log_x = scale != sweep.scales.end() ? scale->second == "log" : lo > 0 && hi / lo > 10;
  return "<figure data-chart=\"" + html_escape(chart.id) + "\"><figcaption>" +
         html_escape(chart.title) + "</figcaption>" + render_scatter_chart(chart) + "</figure>";
}

}  // namespace

bool is_sweep_folder(const std::string& dir) {
  return fs::is_regular_file(fs::path(dir) / "sweep.json");
}

SweepData read_sweep(const std::string& dir) {
  const std::string file = dir + "/results.json";
  const auto json = read_json_object(file);
  UT_CHECK(json && json->is_object() && json->contains("trials"), "report: ", file,
           " is missing or not a sweep's results; run the sweep (unitrain sweep) first");
  SweepData sweep;
  sweep.dir = dir;
  sweep.metric = json->value("metric", std::string());
  if (json->contains("scales") && json->at("scales").is_object()) {  // (older results: none)
    for (const auto& [k, v] : json->at("scales").items()) {
      if (v.is_string()) sweep.scales[k] = v.get<std::string>();
    }
  }
  for (const auto& row : json->at("trials")) {
    SweepTrial t;
    t.index = row.at("trial").get<int64_t>();
    for (const auto& [k, v] : row.at("parameters").items()) {
      t.parameters.emplace_back(k, v.get<std::string>());
    }
    t.metric = json_double(row.at("metric"));
    const std::string d = trial_dir(dir, t.index);
    if (!d.empty() && fs::exists(fs::path(d) / "metrics.jsonl")) t.dir = d;
    sweep.trials.push_back(std::move(t));
  }
  return sweep;
}

std::string sweep_section(const SweepData& sweep) {
  std::string out = "<section id=\"sweep\"><h2>Sweep " + html_escape(sweep.dir) + "</h2>";
  if (sweep.trials.empty()) return out + "<p>No trials yet.</p></section>";
  // A trial's colour is its run's: the trials with a folder are the page's runs, in order.
  std::vector<std::string> colours;
  size_t run = 0;
  for (const SweepTrial& t : sweep.trials)
    colours.push_back(t.dir.empty() ? "#999" : run_colour(run++));
  out += "<table><tr><th>trial</th>";
  for (const auto& [k, v] : sweep.trials.front().parameters)
    out += "<th>" + html_escape(k) + "</th>";
  out += "<th>" + html_escape(sweep.metric) + "</th></tr>";
  for (size_t i = 0; i < sweep.trials.size(); ++i) {
    const SweepTrial& t = sweep.trials[i];
    out += fmt::format("<tr><td><span class=\"chip\" style=\"background:{}\"></span>{}</td>",
                       colours[i], t.index);
    for (const auto& [k, v] : t.parameters) out += "<td>" + html_escape(v) + "</td>";
    out += t.metric ? "<td class=\"num\">" + format_value(*t.metric) + "</td>"
                    : std::string("<td class=\"absent\">—</td>");
    out += "</tr>";
  }
  out += "</table><div class=\"charts\">";
  for (size_t p = 0; p < sweep.trials.front().parameters.size(); ++p) {
    out += parameter_chart(sweep, p, colours);
  }
  return out + "</div></section>";
}

}  // namespace unitrain::report
