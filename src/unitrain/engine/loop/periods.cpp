#include "unitrain/engine/loop/periods.h"

namespace unitrain {

Periods::Periods(TrainUnit log_every, TrainUnit val_every, std::optional<TrainUnit> save_every)
    : every_{log_every, val_every, save_every} {}

void Periods::start_at(const TrainState& state) { last_.fill(state); }

bool Periods::due(Event event, const TrainState& now) {
  const TrainState before = last_[event];
  last_[event] = now;
  const std::optional<TrainUnit>& every = every_[event];
  if (!every) return false;
  return periods_behind(*every, now, batches_per_epoch_) !=
         periods_behind(*every, before, batches_per_epoch_);
}

}  // namespace unitrain
