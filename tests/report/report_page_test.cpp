#include "unitrain/report/report_page.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain::report {
namespace {

std::string page_fixture(const std::string& name) {
  return test::source_dir() + "/tests/report/fixture/" + name;
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A copy of a fixture run in a fresh folder (its links kept), to write reports beside it.
std::string copy_of_fixture(const std::string& name) {
  const std::string dir = test::temp_dir() + "/" + name;
  std::filesystem::copy(
      page_fixture(name), dir,
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  return dir;
}

}  // namespace

TEST(ReportPage, OneRunHasEverySectionAndLoadsNothingFromElsewhere) {
  std::vector<RunData> runs = {read_run(page_fixture("run-a"))};
  const std::string html = report_html(runs);
  for (const char* part : {"<!DOCTYPE html>",
                           "<meta name=\"generator\" content=\"unitrain report\">",
                           "id=\"runs\"",
                           "id=\"results\"",
                           "id=\"charts\"",
                           "id=\"checkpoints\"",
                           "id=\"profile\"",
                           "id=\"config\"",
                           "data-chart=\"loss\"",
                           "data-chart=\"acc\"",
                           "data-chart=\"lr\"",
                           "data-chart=\"throughput\"",
                           "data-run=\"fixture-a\" data-split=\"val\"",
                           "optimizer &lt;step&gt;",
                           "test/acc",
                           "finished",
                           "libopenblasp",
                           "173 MB",
                           "val/acc 0.625 (step-2)",
                           "last",
                           "best",
                           "<th>state</th>",  // the checkpoints' last/best/incomplete column
                           "<details open>",
                           "data-script"}) {
    EXPECT_TRUE(test::contains(html, part)) << part;
  }
  for (const char* external : {"<link", "src=", "url(", "@import", "http://", "https://"}) {
    EXPECT_FALSE(test::contains(html, external)) << external;
  }
  EXPECT_FALSE(test::contains(html, "id=\"notes\""));  // everything was read
}

TEST(ReportPage, TheRunsTableSaysAGpusPeakMemory) {
  std::vector<RunData> runs = {read_run(page_fixture("run-a"))};
  EXPECT_TRUE(test::contains(report_html(runs), "<th>peak device memory</th>"));
  runs[0].peak_device_memory = "123 MB (cuda:0)";
  EXPECT_TRUE(test::contains(report_html(runs), "123 MB (cuda:0)"));
}

TEST(ReportPage, TwoRunsShowWhatDiffersAndWhatOneRunLacks) {
  std::vector<RunData> runs = {read_run(page_fixture("run-a")), read_run(page_fixture("run-b"))};
  label_runs(runs);
  const std::string html = report_html(runs);
  // The differing keys, a value only one run has (escaped), the same keys folded.
  const size_t differ = html.find("Keys that differ");
  const size_t folded = html.find("keys the same in every run");
  ASSERT_NE(differ, std::string::npos);
  ASSERT_NE(folded, std::string::npos);
  const std::string differing = html.substr(differ, folded - differ);
  EXPECT_TRUE(test::contains(differing, "<td>optimizer.lr</td><td>2.0e-3</td><td>1.0e-3</td>"));
  EXPECT_TRUE(test::contains(differing,
                             "<td>optimizer.extra</td><td class=\"absent\">(absent)</td>"
                             "<td>&lt;b&gt;&amp;&quot;x&#39;</td>"));
  EXPECT_FALSE(test::contains(differing, "<td>seed</td>"));
  EXPECT_TRUE(test::contains(html.substr(folded), "<td>seed</td><td>42</td>"));
  // Both runs on the loss chart; only a has val; b is unfinished with notes.
  EXPECT_TRUE(test::contains(html, "data-run=\"fixture-b\" data-split=\"train\""));
  EXPECT_FALSE(test::contains(html, "data-run=\"fixture-b\" data-split=\"val\""));
  EXPECT_TRUE(test::contains(html, "unfinished"));
  EXPECT_TRUE(test::contains(html, "so far"));
  EXPECT_TRUE(test::contains(html, "id=\"notes\""));
  EXPECT_TRUE(test::contains(html, "No checkpoints in"));
}

TEST(ReportPage, WritesBesideOneRunOrToTheGivenFileAndNeverOverAnotherFile) {
  const std::string run = copy_of_fixture("run-a");
  EXPECT_EQ(default_report_path({run}), run + "/report.html");
  EXPECT_EQ(default_report_path({run, run}), "report.html");
  EXPECT_EQ(write_report({run}, ""), run + "/report.html");
  const std::string first = text_of(run + "/report.html");
  EXPECT_TRUE(test::contains(first, "fixture-a"));
  // A report is replaced by a new one.
  EXPECT_EQ(write_report({run}, run + "/report.html"), run + "/report.html");
  EXPECT_EQ(text_of(run + "/report.html"), first);
  // Any other file is left alone, named.
  using test::error_of;
  std::string msg = error_of<ConfigError>([&] { write_report({run}, run + "/config.yaml"); });
  EXPECT_TRUE(test::contains(msg, "config.yaml exists and is not a unitrain report")) << msg;
  EXPECT_TRUE(test::contains(text_of(run + "/config.yaml"), "name: fixture-a"));
  msg = error_of<ConfigError>([&] { write_report({run}, run + "/no/such/dir/r.html"); });
  EXPECT_TRUE(test::contains(msg, "does not exist")) << msg;
  msg = error_of<ConfigError>([&] { write_report({run}, run); });
  EXPECT_TRUE(test::contains(msg, "is a folder")) << msg;
  msg = error_of<ConfigError>([&] { write_report({run, run + "/results"}, run + "/two.html"); });
  EXPECT_TRUE(test::contains(msg, "results is not a run folder")) << msg;
  EXPECT_FALSE(std::filesystem::exists(run + "/two.html"));
  for (const auto& e : std::filesystem::directory_iterator(run)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
}

}  // namespace unitrain::report
