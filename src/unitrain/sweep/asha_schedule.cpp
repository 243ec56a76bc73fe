#include "unitrain/sweep/asha_schedule.h"

#include <algorithm>

namespace unitrain {

std::vector<TrainUnit> asha_rungs(const TrainUnit& min, const TrainUnit& max, int64_t r) {
  std::vector<TrainUnit> rungs;
  for (int64_t n = min.count; n < max.count; n *= r) {
    TrainUnit u = min;
    u.count = n;
    rungs.push_back(u);
  }
  rungs.push_back(max);
  return rungs;
}

std::optional<SweepJob> AshaSchedule::next(const std::vector<TrialRecord>& trials) const {
  for (int rung = rungs_ - 2; rung >= 0; --rung) {
    // The trials that finished this rung, best first.
    std::vector<const TrialRecord*> done;
    for (const TrialRecord& t : trials) {
      if (static_cast<int>(t.rung_metrics.size()) > rung) done.push_back(&t);
    }
    std::stable_sort(done.begin(), done.end(), [&](const TrialRecord* a, const TrialRecord* b) {
      return better(a->rung_metrics[rung], b->rung_metrics[rung]);
    });
    const size_t top = done.size() / static_cast<size_t>(r_);
    for (size_t i = 0; i < top; ++i) {
      const TrialRecord& t = *done[i];
      if (t.rung() == rung && t.status == TrialStatus::Stopped) return SweepJob{t.index, rung + 1};
    }
  }
  if (static_cast<int64_t>(trials.size()) < max_trials_) {
    return SweepJob{static_cast<int64_t>(trials.size()), 0};
  }
  return std::nullopt;
}

}  // namespace unitrain
