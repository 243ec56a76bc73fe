#pragma once
// AshaSchedule: which job a sweep runs next — a promotion or a new trial — from the trials'
// records alone (asynchronous successive halving, Li et al. 2018; Determined's adaptive_asha).
#include <cstdint>
#include <optional>
#include <vector>

#include "unitrain/core/train_unit.h"
#include "unitrain/sweep/trial_record.h"

namespace unitrain {

/// One job: train trial `trial` to rung `rung`'s length (a new trial for rung 0, a resume of
/// its run folder for a promotion).
struct SweepJob {
  int64_t trial = 0;
  int rung = 0;
  bool operator==(const SweepJob& o) const { return trial == o.trial && rung == o.rung; }
};

/// The rungs' lengths: min * r^i while shorter than max, then max. Requires min and max in the
/// same unit with min <= max.
std::vector<TrainUnit> asha_rungs(const TrainUnit& min, const TrainUnit& max, int64_t r);

/// The asynchronous rule: a trial that finished rung i and is not training goes on to rung
/// i + 1 when it is among the best floor(n / r) of the n trials that have finished rung i so
/// far. next() looks at the highest rung first and, within a rung, at the best trial first
/// (ties: the lower index); with no promotion due it starts the next new trial while fewer
/// than max_trials exist. One rung (grid, random) makes it run the trials in index order.
///
/// next() is a function of the records alone: with one trial at a time the jobs follow from
/// the seed and the results, and a sweep continued after a kill makes the same ones.
class AshaSchedule {
 public:
  AshaSchedule(int rungs, int64_t reduction_factor, bool higher_is_better, int64_t max_trials)
      : rungs_(rungs), r_(reduction_factor), higher_(higher_is_better), max_trials_(max_trials) {}

  /// The next job, or none while none is due (wait for the running ones, or the sweep is done).
  std::optional<SweepJob> next(const std::vector<TrialRecord>& trials) const;
  /// True when `a` is better than `b`.
  bool better(double a, double b) const { return higher_ ? a > b : a < b; }

 private:
  int rungs_;
  int64_t r_;
  bool higher_;
  int64_t max_trials_;
};

}  // namespace unitrain
