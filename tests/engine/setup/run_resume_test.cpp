// What a fit resumes from: a run that stopped to be resumed continues under checkpoint.resume
// none; the config.yaml a run keeps.
#include "unitrain/engine/setup/run_resume.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/log/run_summary.h"

namespace unitrain {
namespace {

TEST(RunResume, ARunAwaitsResumeAfterAPauseOrASaveSignalOnly) {
  const std::string dir = test::temp_dir();
  EXPECT_EQ(status_awaiting_resume(dir), "");  // no summary
  EXPECT_EQ(resume_choice("none", dir), "none");
  RunSummary s;
  s.name = "demo";
  s.status = RunStatus::StoppedEarly;
  s.write(dir);
  EXPECT_EQ(status_awaiting_resume(dir), "");
  s.status = RunStatus::Paused;
  s.status_detail = "timer";
  s.write(dir);
  EXPECT_EQ(status_awaiting_resume(dir), "paused: timer");
  EXPECT_EQ(resume_choice("none", dir), "auto");
  EXPECT_EQ(resume_choice("last", dir), "last");
  test::write_file(dir + "/results/summary.json", "{");  // damaged: says nothing
  EXPECT_EQ(status_awaiting_resume(dir), "");
}

TEST(RunResume, TheRunsConfigResumesAutomaticallyWhereThisInvocationNamedACheckpoint) {
  const std::string dir = test::temp_dir();
  for (const std::string resume : {"auto", "last"}) {
    Config raw =
        Config::from_string("run_dir: " + dir + "\ncheckpoint: {resume: " + resume + "}\n");
    const Config config = resolve_run_config(raw);
    const RunSettings settings = RunSettings::from_config(config);
    EXPECT_TRUE(test::contains(run_config_text(config, settings), "resume: auto"))
        << run_config_text(config, settings);
  }
}

}  // namespace
}  // namespace unitrain
