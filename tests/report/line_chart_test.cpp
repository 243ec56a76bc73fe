#include "unitrain/report/line_chart.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"

namespace unitrain::report {
namespace {

size_t occurrences(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(LineChart, SeriesAreTaggedAndEveryTextIsEscaped) {
  LineChart c{"loss", "loss", "step", "loss", {}};
  c.series.push_back({"<run & \"one\">", "train", "#4e79a7", {{0, 2.0}, {10, 1.0}, {20, 0.5}}});
  c.series.push_back({"<run & \"one\">", "val", "#4e79a7", {{10, 1.2}, {20, std::nan("")}}});
  const std::string svg = render_line_chart(c);
  EXPECT_EQ(svg.rfind("<svg class=\"chart\" data-chart=\"loss\"", 0), 0u) << svg;
  EXPECT_TRUE(
      test::contains(svg, R"(data-run="&lt;run &amp; &quot;one&quot;&gt;" data-split="train")"));
  EXPECT_TRUE(test::contains(svg, R"(data-split="val" data-points="1")"));  // the NaN is left out
  EXPECT_FALSE(test::contains(svg, "<run")) << "unescaped label";
  EXPECT_EQ(occurrences(svg, "<g class=\"series\""), 2u);
  EXPECT_EQ(occurrences(svg, "<circle"), 4u);            // a marker per finite point
  EXPECT_TRUE(test::contains(svg, "stroke-dasharray"));  // val is dashed
  EXPECT_TRUE(test::contains(svg, "step 20: 0.5</title>"));
  EXPECT_TRUE(test::contains(svg, ">step</text>"));  // axis labels
  EXPECT_TRUE(test::contains(svg, ">loss</text>"));
  EXPECT_TRUE(test::contains(svg, ">0.5</text>"));  // y ticks from 0.5 to 2.0
  EXPECT_TRUE(test::contains(svg, ">2.0</text>"));
  EXPECT_TRUE(test::contains(svg, ">20</text>"));  // an x tick
  EXPECT_EQ(svg.substr(svg.size() - 6), "</svg>");
}

TEST(LineChart, ANonFiniteValueBreaksTheLine) {
  LineChart c{"x", "x", "step", "x", {}};
  c.series.push_back({"r", "train", "#000", {{1, 1}, {2, INFINITY}, {3, 3}, {4, 4}}});
  const std::string svg = render_line_chart(c);
  // Two pieces: M (1) then M (3) L (4).
  EXPECT_EQ(occurrences(svg, " M"), 1u) << svg;
  EXPECT_EQ(occurrences(svg, " L"), 1u) << svg;
}

TEST(LineChart, LongSeriesDrawTheExtremesOfEachPixelColumn) {
  ChartSeries s{"r", "train", "#000", {}};
  for (int i = 0; i < 20000; ++i) s.points.emplace_back(i, i % 2 ? 1.0 : -1.0);
  s.points[10000].second = 7;  // a spike survives
  const std::string svg = render_line_chart({"x", "x", "step", "x", {s}});
  EXPECT_TRUE(test::contains(svg, "data-points=\"20000\""));
  EXPECT_LE(occurrences(svg, " L"), 2u * 481);  // at most 2 points per column of the 480 px plot
  EXPECT_GE(occurrences(svg, " L"), 480u);
  // y from -2 to 8 over the 244 px from 256 down to 12: 7 is drawn at 256 - 0.9 * 244 = 36.4.
  EXPECT_TRUE(test::contains(svg, ",36.4 L")) << "the spike was dropped";
}

TEST(LineChart, ALogAxisLabelsItsTicksWithTheValuesAndSaysSo) {
  LineChart c{"loss", "loss", "step", "loss", {}};
  c.series.push_back({"r", "train", "#000", {{0, 0.01}, {10, 0.1}, {20, 1}, {30, 10}}});
  c.log_y = true;
  const std::string svg = render_line_chart(c);
  for (const char* tick : {">0.01</text>", ">0.1</text>", ">1</text>", ">10</text>"}) {
    EXPECT_TRUE(test::contains(svg, tick)) << tick << "\n" << svg;
  }
  EXPECT_TRUE(test::contains(svg, ">loss (log scale)</text>"));
  EXPECT_TRUE(test::contains(svg, "step 30: 10</title>"));  // the value, not its logarithm
  LineChart linear = c;
  linear.log_y = false;
  EXPECT_FALSE(test::contains(render_line_chart(linear), "(log scale)"));
}

TEST(LineChart, ManyPointsDrawNoMarkers) {
  ChartSeries s{"r", "train", "#000", {}};
  for (int i = 0; i < 500; ++i) s.points.emplace_back(i, std::sin(i / 10.0));
  const std::string svg = render_line_chart({"x", "x", "step", "x", {s}});
  EXPECT_EQ(occurrences(svg, "<circle"), 0u);
  EXPECT_TRUE(test::contains(svg, "data-points=\"500\""));
}

}  // namespace unitrain::report
