#include "unitrain/engine/setup/run_resume.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "unitrain/checkpoint/checkpointer.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/engine/setup/run_plan.h"
#include "unitrain/log/console.h"
#include "unitrain/log/run_summary.h"

namespace unitrain {

namespace {

std::string finished_how(const TrainState& s, bool stopped, const TrainUnit& length) {
  return stopped ? fmt::format("stopped early at step {}", s.step)
                 : fmt::format("step {}, train.max_length {}", s.step, length.str());
}

}  // namespace

std::string status_awaiting_resume(const std::string& run_dir) {
  const auto summary = RunSummary::read_if_valid(run_dir);
  return summary && summary->resumable() ? summary->status_text() : "";
}

std::string resume_choice(const std::string& resume, const std::string& run_dir) {
  return resume == "none" && !status_awaiting_resume(run_dir).empty() ? "auto" : resume;
}

std::string resume_checkpoint(const RunSettings& run, std::vector<std::string>* skipped) {
  const CheckpointOptions& ckpt = run.checkpoint;
  if (!ckpt.enabled || run.train.test_mode) return "";
  return Checkpointer(ckpt, run.run_dir + "/checkpoints")
      .find_resume(resume_choice(ckpt.resume, run.run_dir), skipped);
}

ResumePoint read_resume(const RunSettings& settings, const Config& config, bool say) {
  const CheckpointOptions& ckpt = settings.checkpoint;
  const std::string& run_dir = settings.run_dir;
  const std::string choice = resume_choice(ckpt.resume, run_dir);
  if (choice != ckpt.resume && say) {
    log::info(fmt::format(
        "checkpoint.resume none: the run in {} stopped to be resumed ({}): continuing it "
        "(none starts over a run that finished, failed or was interrupted with Ctrl-C)",
        run_dir, status_awaiting_resume(run_dir)));
  }
  const std::string dir = resume_checkpoint(settings);
  try {
    return read_resume_point(dir, config);
  } catch (const ConfigError& e) {
    if (choice == ckpt.resume) throw;
    throw ConfigError(fmt::format(
        "{} (the run stopped to be resumed, so checkpoint.resume none continues it: to start "
        "over in {}, move its checkpoints/ folder away first)",
        e.what(), run_dir));
  }
}

void check_finished_run_resume(const ResumePoint& resume, const RunSettings& settings,
                               const Config& config) {
  if (resume.dir.empty()) return;
  const TrainState& saved = resume.file.state;
  const TrainUnit& length = settings.train.max_length;
  if (!resume.file.stopped && !reached(length, saved)) return;
  // Re-running a finished run with other settings would silently train nothing: refuse, before
  // anything in run_dir changes.
  std::vector<std::string> changed;
  for (const ConfigChange& c : resume.config_changes) {
    if (!changes_nothing_trained(c.key)) changed.push_back(c.str());
  }
  const std::string& run_dir = settings.run_dir;
  UT_CHECK(changed.empty(), run_dir, " holds a finished run (",
           finished_how(saved, resume.file.stopped, length), ") trained with other settings (",
           fmt::format("{}", fmt::join(changed, "; ")),
           "), so nothing would be trained. To train with the new settings start a new run: add ",
           new_run_option(config), ", or --checkpoint.resume none to start over in ", run_dir,
           " (the finished run's files move to ", run_dir, "/history/)");
}

std::string finished_run_line(const TrainState& state, bool stopped, const RunSettings& settings,
                              const Config& config) {
  return fmt::format(
      "training already complete ({}): nothing to train. To train again, start a new run with "
      "{} or --checkpoint.resume none",
      finished_how(state, stopped, settings.train.max_length), new_run_option(config));
}

std::string run_config_text(const Config& config, const RunSettings& settings) {
  const std::string& resume = settings.checkpoint.resume;
  if (resume == "auto" || resume == "none") return config.dump();
  Config kept = config;
  kept.set("checkpoint.resume", "auto");
  return kept.dump();
}

}  // namespace unitrain
