#pragma once
// The end of a fit, from its loop: its result with the exit status after a signal or a pause,
// results/summary.json, the profile's files, and the run's last lines (done, or what a signal
// means for the next command).
#include "unitrain/engine/fit_result.h"

namespace unitrain {

class TrainLoop;
struct RunSettings;

/// The FitResult of `loop` once it has run: `exit_code` after a signal (128 + the signal, or
/// checkpoint.on_signal.exit_code when a checkpoint was saved) or a pause (the same code: run
/// the same command to resume); rank 0 writes results/summary.json (not in train.test_mode);
/// profile.enabled's files; then the last lines in the log.
FitResult conclude_fit(const TrainLoop& loop, const RunSettings& settings);

/// FitResult::exit_code for a run `signal` stopped (0: none did): 130 for SIGINT, 128 + the
/// signal when no checkpoint is saved, else checkpoint.on_signal.exit_code.
int exit_code_after_signal(const RunSettings& settings, int signal);

}  // namespace unitrain
