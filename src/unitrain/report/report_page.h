#pragma once
// `unitrain report`: one self-contained HTML page about one or more runs (docs/report.md).
#include <string>
#include <vector>

#include "unitrain/report/run_data.h"

namespace unitrain::report {

/// The page: runs (status, duration, hardware), results, a chart per metric over steps (every
/// run overlaid, one colour per run, train solid and val dashed), learning rate, throughput,
/// checkpoints, profile, config, notes. Inline CSS, inline SVG and a few lines of inline script
/// (legend toggles; it marks <body data-script="ran">); nothing is loaded from elsewhere.
/// `sweep_sections`: HTML placed first (sweep_report.h's sections of sweep folders).
std::string report_html(const std::vector<RunData>& runs, const std::string& sweep_sections = "");

/// Where the report goes without -o: RUN_DIR/report.html for one run, report.html (in the
/// working folder) for several.
std::string default_report_path(const std::vector<std::string>& run_dirs);

/// Reads the run folders and writes their report to `out` ("" = default_report_path) atomically;
/// a sweep folder (sweeps/<name>, sweep_report.h) stands for its trials' run folders and adds
/// its section (the trials and a parameter-vs-metric chart per parameter);
/// returns the path written. ConfigError naming the folder or file at fault: a folder that is
/// not a run folder, `out` an existing file that is not a unitrain report (never overwritten) or
/// in a folder that does not exist.
std::string write_report(const std::vector<std::string>& run_dirs, const std::string& out);

}  // namespace unitrain::report
