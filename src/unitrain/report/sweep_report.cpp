#include "unitrain/report/sweep_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "unitrain/core/error.h"
#include "unitrain/log/run_summary.h"
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
  // The first rung's metric: every trial that ran has one (ASHA's later rungs only some).
  const bool by_rung = std::any_of(sweep.trials.begin(), sweep.trials.end(),
                                   [](const SweepTrial& t) { return !t.rung_metrics.empty(); });
  chart.title = sweep.metric + (by_rung ? " at the first rung" : "") + " against " +
                sweep.trials.front().parameters[p].first;
  chart.x_label = sweep.trials.front().parameters[p].first;
  chart.y_label = sweep.metric;
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < sweep.trials.size(); ++i) {
    const SweepTrial& t = sweep.trials[i];
    const auto x = number_of(t.parameters[p].second);
    if (!x) return "";  // not a numeric parameter
    const std::optional<double> y =
        by_rung ? (t.rung_metrics.empty() ? std::nullopt : std::optional(t.rung_metrics[0]))
                : t.metric;
    if (!y) continue;
    lo = std::min(lo, *x), hi = std::max(hi, *x);
    chart.points.push_back({*x, *y, fmt::format("trial {}", t.index), colours[i]});
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
  if (json->contains("best") && json->at("best").is_number_integer())
    sweep.best = json->at("best").get<int64_t>();
  if (json->contains("scales") && json->at("scales").is_object()) {  // (older results: none)
    for (const auto& [k, v] : json->at("scales").items()) {
      if (v.is_string()) sweep.scales[k] = v.get<std::string>();
    }
  }
  for (const auto& row : json->at("trials")) {
    SweepTrial t;
    t.index = row.at("trial").get<int64_t>();
    for (const auto& [k, v] : row.at("parameters").items()) {  // (older results: all text)
      t.parameters.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    }
    t.metric = json_double(row.at("metric"));
    if (row.contains("rung_metrics") && row.at("rung_metrics").is_array()) {
      for (const auto& v : row.at("rung_metrics")) {
        if (const auto d = json_double(v)) t.rung_metrics.push_back(*d);
      }
    }
    if (row.contains("rung") && row.at("rung").is_number_integer())
      t.rung = row.at("rung").get<int>();
    if (row.contains("steps") && row.at("steps").is_number_integer())
      t.steps = row.at("steps").get<int64_t>();
    if (row.contains("status") && row.at("status").is_string())
      t.status = row.at("status").get<std::string>();
    const std::string d = trial_dir(dir, t.index);
    if (!d.empty() && fs::exists(fs::path(d) / "metrics.jsonl")) t.dir = d;
    // A sweep before `stopped early` was a trial status called such a trial finished; its
    // run folder's summary.json says what happened.
    if (const auto summary = t.dir.empty() ? std::nullopt : RunSummary::read_if_valid(t.dir);
        summary && summary->status == RunStatus::StoppedEarly) {
      t.status = run_status_text(RunStatus::StoppedEarly);
    }
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
  out +=
      "<th>rung</th><th>" + html_escape(sweep.metric) + "</th><th>steps</th><th>status</th></tr>";
  for (size_t i = 0; i < sweep.trials.size(); ++i) {
    const SweepTrial& t = sweep.trials[i];
    const bool best = sweep.best == t.index;
    out += fmt::format("<tr{}><td><span class=\"chip\" style=\"background:{}\"></span>{}{}</td>",
                       best ? " class=\"best\"" : "", colours[i], t.index, best ? " (best)" : "");
    for (const auto& [k, v] : t.parameters) out += "<td>" + html_escape(v) + "</td>";
    out += t.rung >= 0 ? fmt::format("<td class=\"num\">{}</td>", t.rung)
                       : std::string("<td class=\"absent\">—</td>");
    out += t.metric ? "<td class=\"num\">" + format_value(*t.metric) + "</td>"
                    : std::string("<td class=\"absent\">—</td>");
    out += fmt::format("<td class=\"num\">{}</td><td>{}</td></tr>", t.steps, html_escape(t.status));
  }
  out += "</table><div class=\"charts\">";
  for (size_t p = 0; p < sweep.trials.front().parameters.size(); ++p) {
    out += parameter_chart(sweep, p, colours);
  }
  return out + "</div></section>";
}

}  // namespace unitrain::report
