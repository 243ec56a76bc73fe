#include "unitrain/report/report_sections.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "unitrain/report/config_diff.h"
#include "unitrain/report/html_text.h"
#include "unitrain/report/report_charts.h"

namespace unitrain::report {
namespace {

std::string chip(size_t run) {
  return fmt::format(R"(<span class="chip" style="background:{}"></span>)", run_colour(run));
}

std::string td(const std::string& text, bool number = false) {
  return (number ? "<td class=\"num\">" : "<td>") + html_escape(text) + "</td>";
}

std::string or_dash(const std::string& s) { return s.empty() ? "—" : s; }

/// Metric keys in reading order: val/*, test/*, train/*, then the rest; by name within each.
bool metric_before(const std::string& a, const std::string& b) {
  const auto rank = [](const std::string& k) {
    return k.rfind("val/", 0) == 0     ? 0
           : k.rfind("test/", 0) == 0  ? 1
           : k.rfind("train/", 0) == 0 ? 2
                                       : 3;
  };
  return rank(a) != rank(b) ? rank(a) < rank(b) : a < b;
}

std::string metric_table(const std::vector<std::string>& keys,
                         const std::map<std::string, double>& values) {
  std::string out;
  for (const auto& k : keys) {
    const auto it = values.find(k);
    out += it == values.end() ? "<td class=\"num\">—</td>" : td(format_value(it->second), true);
  }
  return out;
}

std::optional<std::string> setting_of(const RunStart& start, const std::string& name) {
  for (const auto& [k, v] : start.settings) {
    if (k == name) return v;
  }
  return std::nullopt;
}

/// A run's starts when they were not alike: a row per start with the settings that differ
/// between them and the config keys each resume changed; "" for one start or alike ones.
std::string starts_table(const RunData& run, size_t r) {
  if (run.starts.size() < 2) return "";
  std::vector<std::string> names;  // the settings whose value is not the same in every start
  for (const RunStart& s : run.starts) {
    for (const auto& [name, v] : s.settings) {
      const bool differs = std::any_of(run.starts.begin(), run.starts.end(), [&](const auto& o) {
        return setting_of(o, name) != std::optional<std::string>(v);
      });
      if (differs && std::find(names.begin(), names.end(), name) == names.end())
        names.push_back(name);
    }
  }
  const bool changes = std::any_of(run.starts.begin(), run.starts.end(),
                                   [](const RunStart& s) { return !s.config_changes.empty(); });
  if (names.empty() && !changes) return "";
  std::string out = fmt::format(
      "<h3>{}{}: {} starts</h3><p>What differed between the run's starts (train.log); the table "
      "above shows the last.</p><table><thead><tr><th>start</th><th>from step</th>",
      chip(r), html_escape(run.label), run.starts.size());
  for (const auto& name : names) out += "<th>" + html_escape(name) + "</th>";
  out += changes ? "<th>config changed</th></tr></thead><tbody>" : "</tr></thead><tbody>";
  for (size_t i = 0; i < run.starts.size(); ++i) {
    const RunStart& s = run.starts[i];
    out += "<tr>" + td(std::to_string(i + 1), true) + td(std::to_string(s.from_step), true);
    for (const auto& name : names) out += td(setting_of(s, name).value_or("—"));
    if (changes) {
      std::string said;
      for (const auto& c : s.config_changes) said += (said.empty() ? "" : "; ") + c;
      out += td(or_dash(said));
    }
    out += "</tr>";
  }
  return out + "</tbody></table>";
}

}  // namespace

std::string runs_section(const std::vector<RunData>& runs) {
  std::string out =
      "<section id=\"runs\"><h2>Runs</h2><table><thead><tr><th>run</th><th>folder</th>"
      "<th>status</th><th>duration</th><th>steps</th><th>epochs</th><th>samples</th>"
      "<th>samples/s</th><th>world size</th><th>threads</th><th>reader threads</th>"
      "<th>BLAS</th><th>peak RSS</th><th>peak device memory</th></tr></thead><tbody>";
  for (size_t r = 0; r < runs.size(); ++r) {
    const RunData& run = runs[r];
    out += fmt::format(R"(<tr><td><button type="button" class="run" data-toggle-run="{0}" )"
                       R"(title="show or hide this run's lines">{1}{0}</button></td>)",
                       html_escape(run.label), chip(r));
    out += td(run.dir) + td(run.status) +
           td(format_duration(run.seconds) + (run.has_summary ? "" : " so far"), true);
    out += td(std::to_string(run.step), true) + td(std::to_string(run.epoch), true) +
           td(std::to_string(run.samples), true);
    out += td(run.seconds > 0 ? format_value(run.samples / run.seconds) : "—", true);
    out += td(run.world_size ? std::to_string(*run.world_size) : "—", true);
    out += td(or_dash(run.threads), true) + td(or_dash(run.reader_threads), true) +
           td(or_dash(run.blas)) + td(or_dash(run.peak_rss), true) +
           td(or_dash(run.peak_device_memory), true) + "</tr>";
  }
  out += "</tbody></table>";
  for (size_t r = 0; r < runs.size(); ++r) out += starts_table(runs[r], r);
  return out + "</section>";
}

std::string results_section(const std::vector<RunData>& runs) {
  std::vector<std::map<std::string, double>> latest;
  std::set<std::string> key_set;
  for (const auto& run : runs) {
    latest.push_back(last_values(run.events));
    for (const auto& [k, v] : run.test_metrics) latest.back()[k] = v;
    for (const auto& kv : latest.back()) key_set.insert(kv.first);
  }
  std::vector<std::string> keys(key_set.begin(), key_set.end());
  std::sort(keys.begin(), keys.end(), metric_before);
  std::string out = "<section id=\"results\"><h2>Results</h2>";
  if (keys.empty()) return out + "<p>No metrics logged yet.</p></section>";
  out += "<p>The latest value of each metric";
  out += std::any_of(runs.begin(), runs.end(),
                     [](const RunData& r) { return !r.test_metrics.empty(); })
             ? " (test: results/test.json)."
             : ".";
  out += "</p><table><thead><tr><th>metric</th>";
  for (size_t r = 0; r < runs.size(); ++r)
    out += "<th>" + chip(r) + html_escape(runs[r].label) + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& k : keys) {
    out += "<tr>" + td(k);
    for (const auto& values : latest) out += metric_table({k}, values);
    out += "</tr>";
  }
  if (std::any_of(runs.begin(), runs.end(),
                  [](const RunData& r) { return !r.best_metric.empty(); })) {
    out += "<tr><td>best checkpoint</td>";
    for (const auto& run : runs) {
      out += run.best_metric.empty() || !run.best_value
                 ? std::string("<td>—</td>")
                 : td(run.best_metric + " " + format_value(*run.best_value) + " (" +
                      std::filesystem::path(run.best_checkpoint).filename().string() + ")");
    }
    out += "</tr>";
  }
  return out + "</tbody></table></section>";
}

std::string checkpoints_section(const std::vector<RunData>& runs) {
  std::string out = "<section id=\"checkpoints\"><h2>Checkpoints</h2>";
  for (size_t r = 0; r < runs.size(); ++r) {
    const RunData& run = runs[r];
    out += "<h3>" + chip(r) + html_escape(run.label) + "</h3>";
    if (run.checkpoints.empty()) {
      out += "<p>No checkpoints in " + html_escape(run.dir) + "/checkpoints.</p>";
      continue;
    }
    std::set<std::string> key_set;
    for (const auto& c : run.checkpoints) {
      for (const auto& kv : c.metrics) key_set.insert(kv.first);
    }
    std::vector<std::string> keys(key_set.begin(), key_set.end());
    std::sort(keys.begin(), keys.end(), metric_before);
    out +=
        "<table><thead><tr><th>checkpoint</th><th>step</th><th>epoch</th><th>samples</th>"
        "<th>state</th>";
    for (const auto& k : keys) out += "<th>" + html_escape(k) + "</th>";
    out += "</tr></thead><tbody>";
    for (const auto& c : run.checkpoints) {
      std::string marks = c.last ? "last" : "";
      if (c.best) marks += marks.empty() ? "best" : ", best";
      if (!c.complete) marks += marks.empty() ? "incomplete" : ", incomplete";
      out += "<tr>" + td(c.name) + td(std::to_string(c.step), true) +
             td(std::to_string(c.epoch), true) + td(std::to_string(c.samples), true) + td(marks) +
             metric_table(keys, c.metrics) + "</tr>";
    }
    out += "</tbody></table>";
  }
  return out + "</section>";
}

std::string profile_section(const std::vector<RunData>& runs) {
  if (std::none_of(runs.begin(), runs.end(),
                   [](const RunData& r) { return r.profile.has_value(); })) {
    return "";
  }
  std::string out = "<section id=\"profile\"><h2>Profile</h2>";
  for (size_t r = 0; r < runs.size(); ++r) {
    if (!runs[r].profile) continue;
    const ProfileSummary& p = *runs[r].profile;
    out += "<h3>" + chip(r) + html_escape(runs[r].label) + "</h3>";
    out += fmt::format("<p>{} profiled steps (profile/summary.json).</p>", p.steps);
    out +=
        "<table class=\"profile\"><thead><tr><th>phase</th><th>total s</th><th>mean ms/step</th>"
        "<th>share</th><th></th></tr></thead><tbody>";
    for (const auto& ph : p.phases) {
      const double share = std::clamp(std::isfinite(ph.share) ? ph.share : 0.0, 0.0, 1.0);
      out += "<tr>" + td(ph.name) + td(format_value(ph.total_seconds), true) +
             td(format_value(ph.mean_ms), true) +
             td(std::isfinite(ph.share) ? fmt::format("{:.1f}%", ph.share * 100) : "—", true) +
             fmt::format(R"(<td class="bar"><span style="width:{:.1f}%"></span></td></tr>)",
                         share * 100);
    }
    out += "</tbody></table>";
  }
  return out + "</section>";
}

std::string config_section(const std::vector<RunData>& runs) {
  std::vector<FlatConfig> configs;
  for (const auto& run : runs) configs.push_back(run.config);
  const std::vector<ConfigRow> rows = compare_configs(configs);
  const auto table = [&](bool differing) {
    std::string t = "<table class=\"config\"><thead><tr><th>key</th>";
    const size_t columns = differing ? runs.size() : 1;
    for (size_t r = 0; r < columns; ++r) {
      t += differing ? "<th>" + chip(r) + html_escape(runs[r].label) + "</th>" : "<th>value</th>";
    }
    t += "</tr></thead><tbody>";
    for (const auto& row : rows) {
      if (row.differs != differing) continue;
      t += "<tr>" + td(row.key);
      for (size_t r = 0; r < columns; ++r)
        t += row.values[r] ? td(*row.values[r]) : "<td class=\"absent\">(absent)</td>";
      t += "</tr>";
    }
    return t + "</tbody></table>";
  };
  std::string out = "<section id=\"config\"><h2>Config</h2>";
  if (runs.size() == 1) {
    return out + "<details open><summary>" + std::to_string(rows.size()) + " keys of " +
           html_escape(runs[0].dir) + "/config.yaml</summary>" + table(false) +
           "</details></section>";
  }
  const auto differing =
      std::count_if(rows.begin(), rows.end(), [](const ConfigRow& r) { return r.differs; });
  out += differing ? "<h3>Keys that differ</h3>" + table(true)
                   : std::string("<p>The runs' configs are the same.</p>");
  out += "<details><summary>" + std::to_string(rows.size() - differing) +
         " keys the same in every run</summary>" + table(false) + "</details>";
  return out + "</section>";
}

std::string samples_section(const std::vector<RunData>& runs) {
  std::string out;
  for (size_t r = 0; r < runs.size(); ++r) {
    for (const GeneratedSample& s : runs[r].generated) {
      out += "<tr><td>" + chip(r) + html_escape(runs[r].label) + "</td><td>" +
             std::to_string(s.step) + "</td><td>" + html_escape(s.prompt) + "</td><td><pre>" +
             html_escape(s.completion) + "</pre></td></tr>";
    }
  }
  if (out.empty()) return "";
  return "<section id=\"samples\"><h2>Samples</h2><table><tr><th>run</th><th>step</th>"
         "<th>prompt</th><th>completion</th></tr>" +
         out + "</table></section>";
}

std::string notes_section(const std::vector<RunData>& runs) {
  std::string out;
  for (size_t r = 0; r < runs.size(); ++r) {
    for (const auto& note : runs[r].notes)
      out += "<li>" + chip(r) + html_escape(runs[r].label + ": " + note) + "</li>";
  }
  return out.empty() ? "" : "<section id=\"notes\"><h2>Notes</h2><ul>" + out + "</ul></section>";
}

}  // namespace unitrain::report
