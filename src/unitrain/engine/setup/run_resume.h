#pragma once
// What a fit resumes from: the choice checkpoint.resume makes in run_dir (a run that stopped to
// be resumed continues), the checkpoint read and checked against the run's config, the refusal
// of a finished run's changed settings, and the config.yaml the run keeps.
#include <string>
#include <vector>

#include "unitrain/core/config.h"
#include "unitrain/engine/config/resume_config.h"

namespace unitrain {

struct RunSettings;

/// summary.json's status in `run_dir` when it says the run stopped to be resumed: a save
/// signal's ("stopped by SIGTERM: checkpoint saved; exit 75 ...: run the same command to
/// resume") or a pause's ("paused: why"); "" for any other (finished, stopped early, failed,
/// SIGINT) or no summary.
std::string status_awaiting_resume(const std::string& run_dir);

/// checkpoint.resume as it applies to `run_dir` now: `none` ("do not resume an earlier run")
/// becomes `auto` when the run there stopped to be resumed (status_awaiting_resume): a run's
/// own checkpoints are its own, and the command that stopped it continues it. Anything else as
/// given.
std::string resume_choice(const std::string& resume, const std::string& run_dir);

/// The checkpoint folder a fit with these settings resumes from ("" for a fresh start, or when
/// checkpoints are off or train.test_mode), as resume_choice says in run_dir. The one way to
/// find it (Trainer::resume_checkpoint). `skipped` collects damaged checkpoints passed over
/// instead of warning of them.
std::string resume_checkpoint(const RunSettings& run, std::vector<std::string>* skipped = nullptr);

/// The checkpoint a fit resumes from, read and checked against `config` (its resolved config);
/// an empty one for a fresh start. `say`: the line that `none` continues a run stopped to be
/// resumed (rank 0's).
ResumePoint read_resume(const RunSettings& settings, const Config& config, bool say);

/// ConfigError, before run_dir is touched, when `resume` is a finished run whose config changed
/// since in a way that would train something else.
void check_finished_run_resume(const ResumePoint& resume, const RunSettings& settings,
                               const Config& config);

/// The line a rerun of a finished run says (`state` where it ended; `stopped`: stopped early).
std::string finished_run_line(const TrainState& state, bool stopped, const RunSettings& settings,
                              const Config& config);

/// The run's config.yaml: `config`, but checkpoint.resume `auto` where it named a folder, last
/// or best (where this invocation resumed from, not where the run always does).
std::string run_config_text(const Config& config, const RunSettings& settings);

}  // namespace unitrain
