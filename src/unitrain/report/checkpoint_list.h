#pragma once
// The checkpoints of a run folder as the report lists them: checkpoints/step-<S>/ folders, the
// last and best links, and the counters and metrics each trainer_state.json saved.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace unitrain::report {

/// One folder checkpoints/step-<S>/ and what its trainer_state.json says.
struct CheckpointInfo {
  std::string name;  ///< "step-120"
  int64_t step = 0, epoch = 0, samples = 0;
  bool complete = false;                  ///< MANIFEST.json present (it is written last)
  bool last = false, best = false;        ///< what the links checkpoints/last and best point at
  std::map<std::string, double> metrics;  ///< the last train and val metrics it saved
};

/// checkpoints/step-*/ of the run folder `run_dir`, oldest first (none without checkpoints/). A
/// trainer_state.json that is missing or not JSON leaves the counters at 0 and adds a note.
std::vector<CheckpointInfo> read_checkpoints(const std::string& run_dir,
                                             std::vector<std::string>& notes);

}  // namespace unitrain::report
