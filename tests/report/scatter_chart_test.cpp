#include "unitrain/report/scatter_chart.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"
#include "unitrain/report/sweep_report.h"

namespace unitrain::report {
namespace {

using test::contains;

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(ScatterChart, OneMarkerPerFinitePointWithItsTooltip) {
  ScatterChart chart{"sweep:lr", "val/acc against lr", "lr", "val/acc", true, {}};
  chart.points = {{1e-4, 0.5, "trial 0", "#4e79a7"},
                  {1e-2, 0.9, "trial 1", "#f28e2b"},
                  {-1, 0.7, "trial 2", "#000"}};  // not on a log axis: left out
  const std::string svg = render_scatter_chart(chart);
  EXPECT_EQ(count_of(svg, "<circle"), 2u);
  EXPECT_TRUE(contains(svg, R"(data-point="trial 1")"));
  EXPECT_TRUE(contains(svg, "<title>trial 0: lr 0.0001, val/acc 0.5</title>"));
  EXPECT_TRUE(contains(svg, ">0.001</text>"));  // a log axis labels its ticks with the values
}

TEST(SweepReport, ReadsResultsAndChartsNumericParameters) {
  const std::string dir = test::temp_dir();
  std::ofstream(dir + "/sweep.json") << "{}";
  std::ofstream(dir + "/results.json") << R"({"metric": "val/acc", "trials": [
           {"trial": 0, "parameters": {"optimizer.lr": "0.1", "model.args.activation": "relu"},
            "rung": 0, "metric": 0.8, "steps": 5, "status": "finished"},
           {"trial": 1, "parameters": {"optimizer.lr": "0.01", "model.args.activation": "tanh"},
            "rung": -1, "metric": null, "steps": 0, "status": "running"}]})";
  ASSERT_TRUE(is_sweep_folder(dir));
  const SweepData sweep = read_sweep(dir);
  ASSERT_EQ(sweep.trials.size(), 2u);
  EXPECT_EQ(sweep.metric, "val/acc");
  EXPECT_EQ(sweep.trials[0].metric, 0.8);
  EXPECT_FALSE(sweep.trials[1].metric);
  EXPECT_EQ(sweep.trials[0].dir, "");  // no trial-0 folder
  const std::string html = sweep_section(sweep);
  EXPECT_TRUE(contains(html, R"(data-chart="sweep:optimizer.lr")"));
  EXPECT_FALSE(contains(html, "sweep:model.args.activation"));  // not numbers: no chart
  EXPECT_EQ(count_of(html, "<circle"), 1u);  // the trial without a metric has no marker
}

TEST(SweepReport, TheTableShowsRungStepsAndStatusAndTheChartComparesTheFirstRung) {
  // ASHA: trial 1 went on to rung 1 (its metric there 0.95), trial 0 stopped at rung 0.
  const std::string dir = test::temp_dir();
  std::ofstream(dir + "/sweep.json") << "{}";
  std::ofstream(dir + "/results.json") << R"({"metric": "val/acc", "mode": "max", "best": 1,
      "trials": [
           {"trial": 0, "parameters": {"optimizer.lr": "0.1"}, "rung": 0, "metric": 0.8,
            "rung_metrics": [0.8], "steps": 5, "status": "stopped"},
           {"trial": 1, "parameters": {"optimizer.lr": "0.01"}, "rung": 1, "metric": 0.95,
            "rung_metrics": [0.85, 0.95], "steps": 15, "status": "finished"}]})";
  const SweepData sweep = read_sweep(dir);
  EXPECT_EQ(sweep.best, 1);
  EXPECT_EQ(sweep.trials[1].rung, 1);
  EXPECT_EQ(sweep.trials[1].steps, 15);
  EXPECT_EQ(sweep.trials[0].status, "stopped");
  const std::string html = sweep_section(sweep);
  EXPECT_TRUE(contains(html, "<th>rung</th><th>val/acc</th><th>steps</th><th>status</th>"));
  EXPECT_TRUE(contains(html, "<tr class=\"best\">")) << html;
  EXPECT_TRUE(contains(html, "1 (best)</td>")) << html;
  EXPECT_EQ(count_of(html, "(best)"), 1u);
  EXPECT_TRUE(contains(html, "val/acc at the first rung against optimizer.lr")) << html;
  // Each point is the first rung's metric: trial 1 at 0.85, not its later 0.95.
  EXPECT_TRUE(contains(html, "<title>trial 1: optimizer.lr 0.01, val/acc 0.85</title>")) << html;
}

TEST(SweepReport, DrawsEachParameterOnTheAxisItsDistributionHas) {
  // dropout drawn uniform from 0.01 to 0.4 spans more than a decade: results.json's scales say
  // linear, so no log axis; without scales (older results) the spread decides.
  const std::string trials = R"("trials": [
           {"trial": 0, "parameters": {"model.args.dropout": "0.01"}, "rung": 0, "metric": 0.8,
            "steps": 5, "status": "finished"},
           {"trial": 1, "parameters": {"model.args.dropout": "0.4"}, "rung": 0, "metric": 0.7,
            "steps": 5, "status": "finished"}]})";
  for (const bool with_scales : {true, false}) {
    const std::string dir = test::temp_dir();
    std::ofstream(dir + "/sweep.json") << "{}";
    std::ofstream(dir + "/results.json")
        << R"({"metric": "val/acc", )"
        << (with_scales ? R"("scales": {"model.args.dropout": "linear"}, )" : "") << trials;
    const std::string html = sweep_section(read_sweep(dir));
    EXPECT_EQ(contains(html, ">0.01</text>"), !with_scales) << html;  // a log axis's decade tick
  }
}

}  // namespace
}  // namespace unitrain::report
