#include "unitrain/report/report_charts.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "test_util.h"

namespace unitrain::report {
namespace {

RunData two_event_run(const std::string& label, double lr) {
  RunData r;
  r.label = label;
  r.events.push_back(
      {10, 0, 640, 1.0, {{"train/loss", 2.0}, {"train/lr", lr}, {"train/acc", 0.5}}});
  r.events.push_back({10, 0, 640, 1.5, {{"val/loss", 1.8}, {"val/acc", 0.6}}});
  r.events.push_back(
      {20, 1, 1280, 2.5, {{"train/loss", 1.0}, {"train/lr", lr}, {"train/acc", 0.7}}});
  return r;
}

const LineChart& chart_named(const std::vector<LineChart>& charts, const std::string& id) {
  for (const auto& c : charts) {
    if (c.id == id) return c;
  }
  throw std::runtime_error("no chart " + id);
}

}  // namespace

TEST(ReportCharts, OneChartPerMetricWithEachRunsSplitsLossFirstLrAndThroughputLast) {
  const std::vector<RunData> runs = {two_event_run("a", 1e-3), two_event_run("b", 2e-3)};
  const std::vector<LineChart> charts = report_charts(runs);
  std::vector<std::string> ids;
  for (const auto& c : charts) ids.push_back(c.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"loss", "acc", "lr", "throughput"}));
  const LineChart& loss = chart_named(charts, "loss");
  ASSERT_EQ(loss.series.size(), 4u);  // a train, a val, b train, b val
  EXPECT_EQ(loss.series[0].run, "a");
  EXPECT_EQ(loss.series[0].split, "train");
  EXPECT_EQ(loss.series[1].split, "val");
  EXPECT_EQ(loss.series[2].run, "b");
  EXPECT_EQ(loss.series[0].colour, run_colour(0));
  EXPECT_EQ(loss.series[2].colour, run_colour(1));
  EXPECT_NE(run_colour(0), run_colour(1));
  EXPECT_EQ(loss.series[0].points, (std::vector<std::pair<double, double>>{{10, 2.0}, {20, 1.0}}));
  EXPECT_EQ(chart_named(charts, "lr").title, "learning rate");
  EXPECT_EQ(chart_named(charts, "throughput").y_label, "samples/s");
}

TEST(ReportCharts, ThroughputLeavesValidationTimeOut) {
  const RunData r = two_event_run("a", 1e-3);
  // 640 samples in the first second; then 640 more in the 1 s after validation ended.
  EXPECT_EQ(throughput_points(r.events),
            (std::vector<std::pair<double, double>>{{10, 640}, {20, 640}}));
  // A validation pass ending an epoch between two training events: the interval that holds it
  // gives no point; the next one starts after it.
  std::vector<MetricEvent> epoch_end = {{100, 0, 6400, 10.0, {{"train/loss", 1.0}}},
                                        {150, 1, 9600, 20.0, {{"val/loss", 1.0}}},
                                        {200, 1, 12800, 25.0, {{"train/loss", 1.0}}}};
  EXPECT_EQ(throughput_points(epoch_end),
            (std::vector<std::pair<double, double>>{{100, 640}, {200, 640}}));
  // A restarted count (fewer samples) starts a new interval instead of a negative rate.
  std::vector<MetricEvent> restarted = {
      {5, 0, 500, 1.0, {}}, {2, 0, 200, 0.5, {}}, {4, 0, 400, 1.0, {}}};
  EXPECT_EQ(throughput_points(restarted),
            (std::vector<std::pair<double, double>>{{5, 500}, {4, 400}}));
}

TEST(ReportCharts, EveryRunHasAColourOfItsOwnBeyondThePalette) {
  std::set<std::string> twelve, forty;
  for (size_t i = 0; i < 12; ++i) twelve.insert(run_colour(i));
  for (size_t i = 0; i < 40; ++i) forty.insert(run_colour(i));
  EXPECT_EQ(twelve.size(), 12u);
  EXPECT_EQ(forty.size(), 40u);
  // 12 runs on one page: 12 styles of line.
  std::vector<RunData> runs;
  for (int i = 0; i < 12; ++i) runs.push_back(two_event_run("r" + std::to_string(i), 1e-3));
  std::set<std::string> styles;
  for (const auto& s : chart_named(report_charts(runs), "loss").series)
    styles.insert(s.colour + " " + s.split);
  EXPECT_EQ(styles.size(), 24u);  // each run's train and val
}

TEST(ReportCharts, ALossThatSpansDecadesGetsALogAxisAnAccuracyDoesNot) {
  RunData r = two_event_run("a", 1e-3);
  EXPECT_FALSE(chart_named(report_charts({r}), "loss").log_y);
  r.events.push_back(
      {30, 1, 1920, 3.5, {{"train/loss", 900.0}, {"train/acc", 0.8}}});  // an outlier
  const auto charts = report_charts({r});
  EXPECT_TRUE(chart_named(charts, "loss").log_y);
  EXPECT_FALSE(chart_named(charts, "acc").log_y);
  r.events.push_back({40, 1, 2560, 4.5, {{"train/loss", 0.0}}});  // 0 has no place on a log axis
  EXPECT_FALSE(chart_named(report_charts({r}), "loss").log_y);
}

TEST(ReportCharts, MetricsWithNoFiniteValueAndEmptyRunsGetNoChart) {
  RunData nan_run;
  nan_run.label = "n";
  nan_run.events.push_back({1, 0, 0, 0, {{"train/loss", std::nan("")}}});
  EXPECT_TRUE(report_charts({nan_run}).empty());
  EXPECT_TRUE(report_charts({RunData()}).empty());
}

}  // namespace unitrain::report
