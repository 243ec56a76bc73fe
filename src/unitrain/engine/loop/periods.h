#pragma once
// Periods: "is it time to log / validate / save, has the run reached its length?", answered one
// way for every event.
#include <array>
#include <optional>

#include "unitrain/core/train_state.h"
#include "unitrain/core/train_unit.h"
#include "unitrain/engine/setup/run_plan.h"  // position, periods_behind, reached

namespace unitrain {

/// The run's periodic events. A period elapsed when the run's position in the period's unit
/// crossed a multiple of its count since the event was last asked about: so a period in
/// samples that ends inside an accumulation window is due at the window's end, and a period in
/// epochs only when an epoch ends.
class Periods {
 public:
  enum Event { Log, Validate, Save };
  Periods(TrainUnit log_every, TrainUnit val_every, std::optional<TrainUnit> save_every);
  /// Where counting starts: a fresh run's zero or the resumed checkpoint's state.
  void start_at(const TrainState& state);
  /// The run's batches per epoch (periods of a fraction of an epoch count batches).
  void set_batches_per_epoch(int64_t n) { batches_per_epoch_ = n; }
  /// True once per crossing of `event`'s period since the last call for it (never for a save
  /// without a period).
  bool due(Event event, const TrainState& now);

 private:
  std::array<std::optional<TrainUnit>, 3> every_;
  std::array<TrainState, 3> last_;
  int64_t batches_per_epoch_ = 0;
};

}  // namespace unitrain
