#include "unitrain/report/report_page.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "unitrain/core/error.h"
#include "unitrain/report/html_text.h"
#include "unitrain/report/json_read.h"
#include "unitrain/report/line_chart.h"
#include "unitrain/report/report_charts.h"
#include "unitrain/report/report_sections.h"
#include "unitrain/report/sweep_report.h"

namespace unitrain::report {
namespace {

namespace fs = std::filesystem;

/// Written in every report's <head>: an existing file without it is not overwritten.
constexpr const char* kGeneratorTag = R"(<meta name="generator" content="unitrain report">)";

constexpr const char* kStyle = R"(
body{font-family:"DejaVu Sans",system-ui,sans-serif;margin:24px auto;max-width:1280px;
  padding:0 16px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
p.sub{color:#555;margin:0 0 12px}
table{border-collapse:collapse;font-size:13px;margin:4px 0 12px;display:block;overflow-x:auto;
  max-width:100%}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.absent{color:#999}
tr.best td{font-weight:600}
table.config td{font-family:"DejaVu Sans Mono",monospace;font-size:12px;word-break:break-all;
  max-width:640px}
.chip{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;
  vertical-align:baseline}
button.run{font:inherit;border:0;background:none;padding:0;cursor:pointer;text-align:left;
  white-space:nowrap}
button.run.off{opacity:.4;text-decoration:line-through}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:16px}
figure{margin:0;border:1px solid #e2e2e2;border-radius:4px;padding:8px}
figcaption{font-weight:600;font-size:14px;margin-bottom:2px}
svg.chart{width:100%;height:auto;display:block}
svg .grid{stroke:#ebebeb;stroke-width:1}
svg .axis{stroke:#555;stroke-width:1}
svg .tick{font-size:11px;fill:#444}
svg .axis-label{font-size:12px;fill:#222}
svg .series path{stroke-width:1.8;stroke-linejoin:round}
.legend{font-size:12px;color:#333;display:flex;flex-wrap:wrap;gap:4px 14px}
.legend svg{width:28px;height:10px;vertical-align:middle;margin-right:4px}
td.bar{width:200px}
td.bar span{display:block;height:10px;background:#4e79a7}
details summary{cursor:pointer;margin:6px 0}
)";

// Legend buttons show and hide a run's lines; the last line marks the page as scripted (tests
// read it from the rendered DOM).
constexpr const char* kScript = R"(
(function () {
  document.querySelectorAll('[data-toggle-run]').forEach(function (button) {
    button.addEventListener('click', function () {
      var run = button.getAttribute('data-toggle-run');
      var off = button.classList.toggle('off');
      document.querySelectorAll('g.series').forEach(function (g) {
        if (g.getAttribute('data-run') === run) g.style.display = off ? 'none' : '';
      });
    });
  });
  document.body.setAttribute('data-script', 'ran');
})();
)";

std::string legend(const LineChart& chart) {
  std::string out = "<div class=\"legend\">";
  for (const auto& s : chart.series) {
    const std::string dash = split_dash(s.split);
    out += "<span><svg viewBox=\"0 0 28 10\"><line x1=\"1\" y1=\"5\" x2=\"27\" y2=\"5\" stroke=\"" +
           html_escape(s.colour) + "\" stroke-width=\"2.5\"" +
           (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") + "/></svg>" +
           html_escape(s.run + (s.split.empty() ? "" : " · " + s.split)) + "</span>";
  }
  return out + "</div>";
}

std::string charts_section(const std::vector<RunData>& runs) {
  const std::vector<LineChart> charts = report_charts(runs);
  std::string out = "<section id=\"charts\"><h2>Charts</h2>";
  if (charts.empty()) return out + "<p>No metrics logged yet.</p></section>";
  out +=
      "<p class=\"sub\">Over optimizer steps; train solid, val dashed; hover a point for its "
      "value. Click a run's name above to hide or show its lines.</p><div class=\"charts\">";
  for (const auto& c : charts) {
    out += "<figure data-chart=\"" + html_escape(c.id) + "\"><figcaption>" + html_escape(c.title) +
           "</figcaption>" + render_line_chart(c) + legend(c) + "</figure>";
  }
  return out + "</div></section>";
}

}  // namespace

std::string report_html(const std::vector<RunData>& runs, const std::string& sweep_sections) {
  std::string names;
  for (const auto& r : runs) names += (names.empty() ? "" : ", ") + r.label;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  out += kGeneratorTag;
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  out += "<title>" + html_escape("unitrain report: " + names) + "</title><style>" + kStyle +
         "</style></head>\n<body>";
  out += "<h1>unitrain report</h1><p class=\"sub\">" + html_escape(names) + "</p>\n";
  out += sweep_sections + runs_section(runs) + "\n" + results_section(runs) + "\n" +
         charts_section(runs) + "\n" + checkpoints_section(runs) + "\n" + profile_section(runs) +
         "\n" + samples_section(runs) + "\n" + config_section(runs) + "\n" + notes_section(runs) +
         "\n";
  out += std::string("<script>") + kScript + "</script>\n</body></html>\n";
  return out;
}

std::string default_report_path(const std::vector<std::string>& run_dirs) {
  return run_dirs.size() == 1 ? (fs::path(run_dirs[0]) / "report.html").string() : "report.html";
}

std::string write_report(const std::vector<std::string>& run_dirs, const std::string& out_arg) {
  UT_CHECK(!run_dirs.empty(),
           "report: give at least one run folder, e.g. unitrain report runs/<name>");
  std::vector<RunData> runs;
  std::string sweeps;  // a sweep folder's section; its trials join the runs
  for (const auto& dir : run_dirs) {
    if (!is_sweep_folder(dir)) {
      runs.push_back(read_run(dir));
      continue;
    }
    const SweepData sweep = read_sweep(dir);
    for (const SweepTrial& t : sweep.trials) {
      if (!t.dir.empty()) runs.push_back(read_run(t.dir));
    }
    sweeps += sweep_section(sweep) + "\n";
  }
  UT_CHECK(!runs.empty(), "report: no run to show: the sweep has no trial folder yet");
  label_runs(runs);
  const std::string out = out_arg.empty() ? default_report_path(run_dirs) : out_arg;
  UT_CHECK(!fs::is_directory(out), "report: -o ", out, " is a folder; give a file name such as ",
           (fs::path(out) / "report.html").string());
  if (fs::exists(out)) {
    const auto text = read_text_file(out);
    UT_CHECK(
        text && text->substr(0, 512).find(kGeneratorTag) != std::string::npos, "report: ", out,
        " exists and is not a unitrain report; it is left as it is: choose another file with -o");
  }
  const fs::path parent = fs::path(out).parent_path();
  UT_CHECK(parent.empty() || fs::is_directory(parent), "report: cannot write ", out, ": folder ",
           parent.string(), " does not exist");
  const std::string tmp = out + ".tmp-" + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    UT_CHECK(f.good(), "report: cannot write ", tmp, " (permissions?)");
    f << report_html(runs, sweeps);
    f.close();
    if (!f.good()) {
      std::remove(tmp.c_str());
      throw ConfigError("report: writing " + tmp + " failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw ConfigError("report: cannot rename " + tmp + " to " + out);
  }
  return out;
}

}  // namespace unitrain::report
