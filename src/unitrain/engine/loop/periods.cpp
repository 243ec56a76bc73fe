#include "unitrain/engine/loop/periods.h"

namespace unitrain {

int64_t position(TrainUnit::Unit unit, const TrainState& s) {
  switch (unit) {
    case TrainUnit::Unit::Epochs:
      return s.epoch;
    case TrainUnit::Unit::Steps:
      return s.step;
    case TrainUnit::Unit::Samples:
      return s.samples;
  }
  return 0;
}

int64_t periods_behind(const TrainUnit& every, const TrainState& s, int64_t batches_per_epoch) {
  if (!every.fractional()) return position(every.unit, s) / every.count;
  if (batches_per_epoch <= 0) return s.epoch * every.per / every.count;
  // count / per epochs = count * B / per batches; the batches read: s.epoch * B + the epoch's.
  const int64_t read = s.epoch * batches_per_epoch + s.batch_in_epoch;
  return read * every.per / (every.count * batches_per_epoch);
}

bool reached(const TrainUnit& length, const TrainState& s, int64_t batches_per_epoch) {
  return periods_behind(length, s, batches_per_epoch) >= 1;
}

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
