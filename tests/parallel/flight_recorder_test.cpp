#include "unitrain/parallel/flight_recorder.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "unitrain/core/run_position.h"

namespace unitrain {
namespace {

TEST(FlightRecorder, KeepsTheLastRecordsOldestFirst) {
  FlightRecorder f(4);
  for (int i = 0; i < 6; ++i) f.end(f.begin("all_reduce", 1, 8));
  const std::vector<CollectiveRecord> r = f.recent();
  ASSERT_EQ(r.size(), 4u);
  for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r[i].seq, int64_t(i) + 2);
  EXPECT_EQ(f.count(), 6);
  EXPECT_EQ(f.latest().seq, 5);
  EXPECT_EQ(f.find(1).seq, -1);  // overwritten
  EXPECT_EQ(f.find(3).seq, 3);
  EXPECT_EQ(f.open(), 0);
}

TEST(FlightRecorder, TellsInFlightEndedAndFailed) {
  FlightRecorder f(8);
  EXPECT_EQ(f.latest().seq, -1);
  const int64_t a = f.begin("broadcast", 3, 120);
  const int64_t b = f.begin("all_reduce", 1, 40, 2, "backward");
  EXPECT_EQ(f.open(), 2);
  f.end(a);
  EXPECT_EQ(f.open(), 1);
  EXPECT_TRUE(f.find(b).in_flight());
  f.fail(b);
  EXPECT_EQ(f.open(), 0);
  EXPECT_FALSE(f.find(a).in_flight());
  EXPECT_GE(f.find(a).end, f.find(a).start);
  EXPECT_TRUE(f.find(b).failed);
  EXPECT_LT(f.find(b).end, 0);
  f.end(b);  // a failed record stays failed
  EXPECT_LT(f.find(b).end, 0);
  EXPECT_EQ(f.open(), 0);
}

TEST(FlightRecorder, AnUnfinishedRecordOverwrittenLeavesTheOpenCount) {
  FlightRecorder f(2);
  f.begin("all_reduce", 1, 4);  // never ended
  f.end(f.begin("all_reduce", 1, 4));
  EXPECT_EQ(f.open(), 1);
  f.end(f.begin("all_reduce", 1, 4));  // overwrites #0
  EXPECT_EQ(f.open(), 0);
}

TEST(FlightRecorder, RecordsTakeStepAndPhaseFromThePosition) {
  RunPosition position;
  FlightRecorder f(8);
  f.follow(&position);
  position.enter("gradient sync", 37);
  const int64_t a = f.begin("all_reduce", 1, 32);
  const int64_t b = f.begin("all_reduce", 1, 32, 3, "backward");
  EXPECT_EQ(f.find(a).describe(), "all_reduce #0 (step 37, gradient sync)");
  EXPECT_EQ(f.find(b).describe(), "all_reduce #1 (step 37, backward, bucket 3)");
  EXPECT_EQ(FlightRecorder().latest().describe(), "no collective yet");
}

TEST(FlightRecorder, WritesItsRecordsAsJson) {
  RunPosition position;
  position.enter("backward", 5);
  FlightRecorder f(8);
  f.follow(&position);
  f.end(f.begin("broadcast", 2, 64));
  f.begin("all_reduce", 1, 4096, 0);
  const std::string path = test::temp_dir() + "/logs/flight-rank-1.json";
  ASSERT_TRUE(f.write(path, 1, "it failed", {"rank 2: gone"}));
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["rank"], 1);
  EXPECT_EQ(j["error"], "it failed");
  EXPECT_EQ(j["peers"][0], "rank 2: gone");
  EXPECT_EQ(j["step"], 5);
  EXPECT_EQ(j["phase"], "backward");
  ASSERT_EQ(j["records"].size(), 2u);
  EXPECT_EQ(j["records"][0]["op"], "broadcast");
  EXPECT_EQ(j["records"][0]["tensors"], 2);
  EXPECT_TRUE(j["records"][0]["end"].is_number());
  EXPECT_EQ(j["records"][1]["end"], "in flight");
  EXPECT_EQ(j["records"][1]["bucket"], 0);
  EXPECT_EQ(j["records"][1]["bytes"], 4096);
}

}  // namespace
}  // namespace unitrain
