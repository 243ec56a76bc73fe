#include "unitrain/engine/setup/world_change.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/engine/config/resume_config.h"
#include "unitrain/engine/config/run_settings.h"

namespace unitrain {

bool WorldChange::changes() const {
  return batch_size != from.batch_size || accumulation != from.accumulation;
}

std::string WorldChange::describe() const {
  std::vector<std::string> parts;
  if (accumulation != from.accumulation) {
    parts.push_back(
        fmt::format("train.accumulation_steps {} -> {}", from.accumulation, accumulation));
  }
  if (batch_size != from.batch_size) {
    parts.push_back(fmt::format("data.loader.batch_size {} -> {}", from.batch_size, batch_size));
  }
  return parts.empty() ? "the same batch and accumulation"
                       : fmt::format("{}", fmt::join(parts, ", "));
}

WorldChange plan_world_change(const SavedLayout& saved, int world, int64_t batch_size,
                              const std::string& dir) {
  const int64_t global = saved.world * saved.batch_size * saved.accumulation;
  WorldChange c;
  c.from = saved;
  if (global % (world * batch_size) == 0) {
    c.batch_size = batch_size;
    c.accumulation = global / (world * batch_size);
  } else if (global % (world * saved.accumulation) == 0) {
    c.batch_size = global / (world * saved.accumulation);
    c.accumulation = saved.accumulation;
  } else {
    std::vector<int> fits;
    for (int w = 1; w <= 64; ++w) {
      if (global % (w * batch_size) == 0 || global % (w * saved.accumulation) == 0)
        fits.push_back(w);
    }
    throw ConfigError(fmt::format(
        "cannot resume from {} on {} process(es): its global batch of {} samples per step ({} "
        "process(es) x data.loader.batch_size {} x accumulation {}) does not split evenly over {} "
        "process(es) with batch {} or with accumulation {}; resume on {} process(es)",
        dir, world, global, saved.world, saved.batch_size, saved.accumulation, world, batch_size,
        saved.accumulation, fmt::join(fits, ", ")));
  }
  if (world == saved.world && !c.changes()) {
    c.batch_in_epoch = saved.batch_in_epoch;
    return c;
  }
  UT_CHECK(saved.micro_in_window == 0, "cannot resume from ", dir, " on ", world,
           " process(es) with batch ", c.batch_size, " and accumulation ", c.accumulation,
           ": it was saved inside an accumulation window (", saved.world, " process(es), batch ",
           saved.batch_size, ", accumulation ", saved.accumulation,
           "), whose gradients so far "
           "cannot be split another way; resume it as it was saved, or from a checkpoint saved at "
           "a step's end");
  const int64_t position = saved.batch_in_epoch * saved.world * saved.batch_size;
  const int64_t per_micro = world * c.batch_size;
  UT_CHECK(position % per_micro == 0, "cannot resume from ", dir, " on ", world,
           " process(es): it stopped at sample ", position,
           " of its epoch, which is not a "
           "multiple of the new ",
           world, " x ", c.batch_size, " samples per micro-batch; resume it with ", saved.world,
           " process(es)");
  c.batch_in_epoch = position / per_micro;
  return c;
}

void fit_resume_to_world(ResumePoint& resume, int world, RunSettings& settings, bool replicas) {
  if (resume.dir.empty()) return;
  const int64_t batch = settings.loader.batch_size_;
  SavedLayout saved;
  const TrainerStateFile& file = resume.file;
  saved.world = static_cast<int>(file.world_size);
  saved.batch_size = file.batch_size > 0 ? file.batch_size : batch;
  saved.accumulation = file.accumulation > 0
                           ? file.accumulation
                           : settings.train.resolve_accumulation(batch, file.world_size);
  saved.batch_in_epoch = file.state.batch_in_epoch;
  saved.micro_in_window = file.state.micro_in_window;
  const WorldChange change = plan_world_change(saved, world, batch, resume.dir);
  resume.file.state.batch_in_epoch = change.batch_in_epoch;
  if (change.changes()) {
    settings.loader.batch_size(change.batch_size);
    settings.train.accumulation_steps = change.accumulation;
  }
  if (saved.world != world) {
    resume.world_change = fmt::format(
        "resuming on {} {} a checkpoint written by {}: the global batch of {} samples "
        "per step is kept ({}), training continues at sample {} of epoch {}",
        world, replicas ? "data-parallel replica(s)" : "process(es)", saved.world,
        saved.world * saved.batch_size * saved.accumulation, change.describe(),
        saved.batch_in_epoch * saved.world * saved.batch_size, resume.file.state.epoch);
  }
}

}  // namespace unitrain
