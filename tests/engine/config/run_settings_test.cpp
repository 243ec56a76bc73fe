// RunSettings on its own: what a resolved config says, parsed once, and the run's name checked
// as the folder name it becomes.
#include "unitrain/engine/config/run_settings.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/engine/config/load_config.h"

namespace unitrain {
namespace {

TEST(RunSettings, ReadsTheRootKeysAndSectionsOfAResolvedConfig) {
  register_builtins();
  const RunSettings s = RunSettings::from_config(
      resolve_run_config(Config::from_string("name: demo\nseed: 7\n"
                                             "train: {max_length: 3 steps, accumulation_steps: 2}\n"
                                             "scheduler: {type: cosine, interval: epoch}\n"
                                             "callbacks: [{type: lr_monitor}]\n")));
  EXPECT_EQ(s.name, "demo");
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.run_dir, "runs/demo");
  EXPECT_EQ(s.train.max_length.str(), "3 steps");
  EXPECT_EQ(s.train.resolve_accumulation(8, 1), 2);
  EXPECT_TRUE(s.schedule_per_epoch);
  ASSERT_EQ(s.callbacks.size(), 1u);
}

TEST(RunSettings, ANameMustBeOneFolderName) {
  check_folder_name("name", "run-1", "runs", "run_dir");  // fine
  for (const char* bad : {"", ".", "..", "a/b"}) {
    const std::string message =
        test::config_error_of([&] { check_folder_name("name", bad, "runs", "run_dir"); });
    EXPECT_TRUE(test::contains(message, "must be one folder name (runs/<name> by default)"))
        << message;
    EXPECT_TRUE(test::contains(message, "set run_dir for a folder elsewhere")) << message;
  }
}

}  // namespace
}  // namespace unitrain
