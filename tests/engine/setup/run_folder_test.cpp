// The run folder on its own: created and checked, an earlier run's files moved to history/,
// classes.json.
#include "unitrain/engine/setup/run_folder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(RunFolder, IsMadeWritableOrRefusedNamingThePath) {
  const std::string dir = test::temp_dir() + "/a/b";
  prepare_writable_dir(dir);
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_TRUE(fs::is_empty(dir));  // its write test leaves nothing
  const std::string message =
      test::config_error_of([] { prepare_writable_dir("/proc/unitrain-cannot-write"); });
  EXPECT_TRUE(test::contains(message, "/proc/unitrain-cannot-write")) << message;
  EXPECT_TRUE(test::contains(message, "set run_dir to a writable folder")) << message;
}

TEST(RunFolder, AnEarlierRunsFilesMoveToHistoryAndOthersStay) {
  const std::string dir = test::temp_dir();
  EXPECT_EQ(archive_previous_run(dir), "");  // nothing to move
  fs::create_directories(dir + "/checkpoints/step-1");
  std::ofstream(dir + "/metrics.jsonl") << "{}\n";
  std::ofstream(dir + "/train.log") << "x\n";
  std::ofstream(dir + "/mine.txt") << "the user's\n";
  const std::string moved = archive_previous_run(dir);
  ASSERT_FALSE(moved.empty());
  EXPECT_EQ(fs::path(moved).parent_path(), fs::path(dir) / "history");
  EXPECT_TRUE(fs::exists(moved + "/metrics.jsonl"));
  EXPECT_TRUE(fs::exists(moved + "/train.log"));
  EXPECT_TRUE(fs::is_directory(moved + "/checkpoints/step-1"));
  EXPECT_FALSE(fs::exists(dir + "/metrics.jsonl"));
  EXPECT_TRUE(fs::exists(dir + "/mine.txt"));  // not a run's file
}

TEST(RunFolder, ClassNamesRoundTripAndABadFileIsNamed) {
  const std::string dir = test::temp_dir();
  write_class_names(dir, {});
  EXPECT_FALSE(fs::exists(dir + "/classes.json"));  // none: no file
  write_class_names(dir, {"cat", "dog"});
  const std::string text = text_of(dir + "/classes.json");
  EXPECT_EQ(text, class_names_json({"cat", "dog"}));
  EXPECT_EQ(parse_class_names(text, "classes.json"), (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(class_names_json({}), "");
  const std::string message =
      test::error_of<TrainError>([] { parse_class_names("[1, 2]", "ckpt/classes.json"); });
  EXPECT_TRUE(test::contains(message, "ckpt/classes.json")) << message;
}

}  // namespace
}  // namespace unitrain
