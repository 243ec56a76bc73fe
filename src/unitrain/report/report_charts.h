#pragma once
// Which charts a report has and what each shows, from the runs' metrics.jsonl events.
#include <string>
#include <vector>

#include "unitrain/report/line_chart.h"
#include "unitrain/report/run_data.h"

namespace unitrain::report {

/// The charts over steps, in page order: one per metric name with every run's splits on it
/// ("train/loss" and "val/loss" on "loss"; loss first, then by name), the learning rate ("lr"),
/// then throughput (samples/s between consecutive log events; validation time excluded). Run i
/// has colour run_colour(i). A metric chart whose values span more than two decades, all
/// above 0, has a log y axis (wants_log_y). A chart no run has a finite value for is left out.
std::vector<LineChart> report_charts(const std::vector<RunData>& runs);

/// The colour of the run at `index`, each run's its own: the Tableau 10 palette, then its hues
/// darker for runs 10-19, then hues a golden angle apart.
std::string run_colour(size_t index);

/// Training throughput of one run: (step, samples/s) at each training log event, from the
/// samples and time since the previous event of any kind. Validation and test passes are left
/// out: an interval that ends with one (its event is logged when the pass ends) gives no point,
/// and the next interval starts after it.
std::vector<std::pair<double, double>> throughput_points(const std::vector<MetricEvent>& events);

}  // namespace unitrain::report
