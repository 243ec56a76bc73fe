// TrainLogs' checkpoint entry: its section "logs" of trainer_state.json, saved and read back.
#include "unitrain/engine/loop/train_logs.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_util.h"

namespace unitrain {
namespace {

TEST(TrainLogs, ItsSectionCarriesTheSumsAndTheLogPositionToAResume) {
  const std::string dir = test::temp_dir();
  LogOptions no_trackers;
  no_trackers.trackers.clear();
  TrainLogs logs(nullptr, 0);
  logs.open(std::make_unique<RunLogger>(no_trackers, dir, 0));
  logs.add_batch(MetricValue(torch::tensor(2.0)), 4, {}, 4);
  logs.log_val({3, 0, 12, 0, {{"val/loss", 0.5}}}, 3);
  CheckpointWrite out;
  logs.save(out);
  EXPECT_EQ(out.state.last_val.at("val/loss"), 0.5);

  TrainLogs back(nullptr, 0);
  back.restore({dir, out.state, 0});
  EXPECT_EQ(back.events(), 1);  // before a logger opens: the checkpoint's position
  EXPECT_TRUE(back.validated_at(3));
  EXPECT_TRUE(back.has_train_sums());
  EXPECT_EQ(back.take_train_means().at("train/loss"), 2.0);
  EXPECT_EQ(back.resumed_from(), dir);
}

TEST(TrainLogs, ABadSectionIsATrainErrorNamingTheFileAndTheKey) {
  TrainerStateFile state;
  state.set_section("logs", R"({"train_sums": {"a": [1]}})");
  TrainLogs logs(nullptr, 0);
  EXPECT_TRUE(test::contains(test::error_of<TrainError>([&] {
                               logs.restore({"d", state, 0});
                             }),
                             "d/trainer_state.json: sections.logs.train_sums.a must be "
                             "[weighted, weight, exp_of_mean]"));
}

}  // namespace
}  // namespace unitrain
