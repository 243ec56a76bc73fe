// What a Trainer's fit resumes from: the choice checkpoint.resume makes in run_dir, the checks
// of a finished run's settings, and the config the run keeps.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "unitrain/checkpoint/checkpointer.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/config/resume_config.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/engine/loop/periods.h"
#include "unitrain/engine/results/summary_file.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/log/console.h"

namespace unitrain {

namespace {

std::string finished_how(const TrainState& s, bool stopped, const TrainUnit& length) {
  return stopped ? fmt::format("stopped early at step {}", s.step)
                 : fmt::format("step {}, train.max_length {}", s.step, length.str());
}

}  // namespace

std::string Trainer::resume_checkpoint(const RunSettings& run, std::vector<std::string>* skipped) {
  const CheckpointOptions& ckpt = run.checkpoint;
  if (!ckpt.enabled || run.train.test_mode) return "";
  return Checkpointer(ckpt, run.run_dir + "/checkpoints")
      .find_resume(resume_choice(ckpt.resume, run.run_dir), skipped);
}

ResumePoint Trainer::read_resume(bool say) const {
  const CheckpointOptions& ckpt = settings_->checkpoint;
  const std::string choice = resume_choice(ckpt.resume, run_dir());
  if (choice != ckpt.resume && say) {
    log::info(fmt::format(
        "checkpoint.resume none: the run in {} stopped to be resumed ({}): continuing it "
        "(none starts over a run that finished, failed or was interrupted with Ctrl-C)",
        run_dir(), status_awaiting_resume(run_dir())));
  }
  const std::string dir = resume_checkpoint(*settings_);
  try {
    return read_resume_point(dir, config_);
  } catch (const ConfigError& e) {
    if (choice == ckpt.resume) throw;
    throw ConfigError(fmt::format(
        "{} (the run stopped to be resumed, so checkpoint.resume none continues it: to start "
        "over in {}, move its checkpoints/ folder away first)",
        e.what(), run_dir()));
  }
}

void Trainer::check_resume_point(const ResumePoint& resume) const {
  if (resume.dir.empty()) return;
  const TrainState& saved = resume.file.state;
  if (!resume.file.stopped && !reached(options().max_length, saved)) return;
  // Re-running a finished run with other settings would silently train nothing: refuse, before
  // anything in run_dir changes.
  std::vector<std::string> changed;
  for (const ConfigChange& c : resume.config_changes) {
    if (!changes_nothing_trained(c.key)) changed.push_back(c.str());
  }
  UT_CHECK(changed.empty(), run_dir(), " holds a finished run (",
           finished_how(saved, resume.file.stopped, options().max_length), ") trained with other settings (",
           fmt::format("{}", fmt::join(changed, "; ")),
           "), so nothing would be trained. To "
           "train with the new settings start a new run: add ",
           new_run_option(config_), ", or --checkpoint.resume none to start over in ", run_dir(),
           " (the finished run's files move to ", run_dir(), "/history/)");
}

void Trainer::report_finished_run() const {
  log::info(
      fmt::format("training already complete ({}): nothing to train. To train again, start a "
                  "new run with {} or --checkpoint.resume none",
                  finished_how(state(), stop_decided(), options().max_length),
                  new_run_option(config_)));
}

std::string Trainer::run_config_text() const {
  const std::string& resume = settings_->checkpoint.resume;
  if (resume == "auto" || resume == "none") return config_.dump();
  Config kept = config_;
  kept.set("checkpoint.resume", "auto");
  return kept.dump();
}

}  // namespace unitrain
