#include "unitrain/engine/periods.h"

namespace unitrain {

int64_t position(TrainUnit::Unit unit, const TrainState& s) {
  switch (unit) {
    case TrainUnit::Unit::Epochs: return s.epoch;
    case TrainUnit::Unit::Steps: return s.step;
    case TrainUnit::Unit::Samples: return s.samples;
  }
  return 0;
}

bool reached(const TrainUnit& length, const TrainState& s) {
  return position(length.unit, s) >= length.count;
}

Periods::Periods(TrainUnit log_every, TrainUnit val_every, std::optional<TrainUnit> save_every)
    : every_{log_every, val_every, save_every} {}

void Periods::start_at(const TrainState& state) { last_.fill(state); }

bool Periods::due(Event event, const TrainState& now) {
  const TrainState before = last_[event];
  last_[event] = now;
  const std::optional<TrainUnit>& every = every_[event];
  if (!every) return false;
  return position(every->unit, now) / every->count != position(every->unit, before) / every->count;
}

}  // namespace unitrain
