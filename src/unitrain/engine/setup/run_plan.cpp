#include "unitrain/engine/setup/run_plan.h"

#include <algorithm>

#include "unitrain/data/loader.h"

namespace unitrain {

RunPlan RunPlan::make(const TrainOptions& options, const Loader& train, int rank, int world,
                      int64_t micro_shards) {
  RunPlan p;
  p.rank = rank;
  p.world = world;
  p.micro_shards = micro_shards;
  p.batch_size = train.options().batch_size_;
  p.drop_last = train.options().drop_last_;
  p.accumulation =
      micro_shards > 0 ? micro_shards / world : options.resolve_accumulation(p.batch_size, world);
  p.batches_per_epoch = train.batches_per_epoch();
  p.epoch_size = train.epoch_size();
  p.steps_per_epoch = (p.batches_per_epoch + p.accumulation - 1) / p.accumulation;
  p.samples_per_step = p.batch_size * p.accumulation * world;
  const TrainUnit& len = options.max_length;
  switch (len.unit) {
    case TrainUnit::Unit::Epochs:  // a fraction ends at the first window past it
      p.total_steps = (len.count * p.steps_per_epoch + len.per - 1) / len.per;
      break;
    case TrainUnit::Unit::Steps:
      p.total_steps = len.count;
      break;
    case TrainUnit::Unit::Samples:
      p.total_steps = (len.count + p.samples_per_step - 1) / p.samples_per_step;
      break;
  }
  return p;
}

bool RunPlan::ends_window(int64_t b) const {
  return (b + 1) % accumulation == 0 || b + 1 == batches_per_epoch;
}

int64_t RunPlan::window_samples(int64_t b) const {
  const int64_t first = (b / accumulation) * accumulation;
  const int64_t last = std::min(first + accumulation, batches_per_epoch);
  int64_t n = (last - first) * batch_size;
  if (last == batches_per_epoch) {
    const int64_t tail = epoch_size % batch_size;
    if (tail != 0 && !drop_last) n -= batch_size - tail;
  }
  return n;
}

ScheduleContext RunPlan::schedule_context(bool per_epoch, double base_lr) const {
  ScheduleContext ctx;
  ctx.per_epoch = per_epoch;
  ctx.steps_per_epoch = steps_per_epoch;
  ctx.samples_per_step = samples_per_step;
  ctx.total_steps = per_epoch ? (total_steps + steps_per_epoch - 1) / steps_per_epoch : total_steps;
  ctx.base_lr = base_lr;
  return ctx;
}

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

}  // namespace unitrain
