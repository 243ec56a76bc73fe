#pragma once
// WorldChange: how a checkpoint written by W processes continues on another number of them.
#include <cstdint>
#include <string>

namespace unitrain {

struct ResumePoint;
struct RunSettings;

/// What a checkpoint says of the layout it was written with.
struct SavedLayout {
  int world = 1;
  int64_t batch_size = 1;    ///< per process
  int64_t accumulation = 1;  ///< micro-batches per optimizer step
  int64_t batch_in_epoch = 0;
  int64_t micro_in_window = 0;
};

/// The layout a resume on `world` processes takes so that training continues as a run of
/// that many processes would have from the start, with the same global batch (samples per
/// optimizer step) and the same samples in every step:
/// - the global batch G = W x batch x accumulation is kept: the accumulation becomes
///   G / (W' x batch) when that divides, else the per-process batch G / (W' x accumulation);
/// - the position in the epoch is carried as the global sample position (the epoch's order is
///   a function of seed and epoch; rank r reads positions r, r+W', ... of it), in micro-batches
///   of the new layout.
/// With the world and layout the checkpoint had, nothing changes.
struct WorldChange {
  int64_t batch_size = 1;
  int64_t accumulation = 1;
  int64_t batch_in_epoch = 0;
  SavedLayout from;
  bool changes() const;
  std::string describe() const;  ///< e.g. "train.accumulation_steps 1 -> 2" for the log
};

/// ConfigError naming `dir`, the numbers and what would work, when the global batch cannot be
/// split over `world` processes, or when the layout changes and the checkpoint was saved inside
/// an accumulation window. `batch_size`: the config's per-process batch, preferred.
WorldChange plan_world_change(const SavedLayout& saved, int world, int64_t batch_size,
                              const std::string& dir);

/// A resume on `world` processes of a checkpoint (`resume`) written by another number of them,
/// or with another batch layout: keeps its global batch by adjusting the per-process batch or
/// the accumulation in `settings` (plan_world_change), carries its position in the epoch over
/// into `resume`, and when the world changed writes how into `resume.world_change` (the
/// Trainer says it once nothing refused the resume). Nothing without a resume.
/// ConfigError, before the run folder is touched, when that cannot be done. Under
/// distributed.tensor_parallel `world` counts the data-parallel replicas (`replicas` true): the
/// data is cut over those.
void fit_resume_to_world(ResumePoint& resume, int world, RunSettings& settings,
                         bool replicas = false);

}  // namespace unitrain
