#pragma once
// What may change between a checkpoint's config and the run resuming from it.
#include <string>
#include <vector>

#include "unitrain/checkpoint/trainer_state_file.h"
#include "unitrain/core/config.h"

namespace unitrain {

/// One key whose value differs between a checkpoint's config and this run's.
struct ConfigChange {
  std::string key, was, now;
  std::string str() const { return key + ": " + was + " -> " + now; }
};

/// The config.yaml a checkpoint folder was written with (TrainError when it is unreadable).
Config read_checkpoint_config(const std::string& dir);

/// Every key whose value differs between `was` and `now` (flattened: `data.loader.batch_size`;
/// a list of sections by index), "(unset)" for a key one of them lacks.
std::vector<ConfigChange> config_differences(const Config& was, const Config& now);

/// Differences between the config a checkpoint was saved with and `current`; ConfigError
/// naming the key when a key declared fixed on resume changed (run_schema()'s resume classes:
/// model, optimizer, data order, batch size, ...), with the declaration's reason.
std::vector<ConfigChange> check_resume_config(const Config& saved, const Config& current,
                                              const std::string& dir);

/// True when `key` is declared harmless on resume: changing it cannot change what training
/// computes (logging, reader threads, checkpoint writing, test data; threads only in the last
/// bits), so such changes leave a finished run finished.
bool changes_nothing_trained(const std::string& key);

/// What must be known of a checkpoint to resume from before the loop is built, read (and
/// checked against this run's config) before the run folder is touched.
struct ResumePoint {
  std::string dir;                           ///< "" = a fresh start
  TrainerStateFile file;                     ///< its trainer_state.json
  std::vector<ConfigChange> config_changes;  ///< since it was saved
  /// How a resume on another number of processes continues (fit_resume_to_world), said once
  /// nothing refused the resume; "" when the number is the checkpoint's.
  std::string world_change;
};

/// Reads what must be known of `dir` before the loop is built (trainer_state.json, config.yaml)
/// and checks that `current` can resume from it (check_resume_config's ConfigError otherwise).
ResumePoint read_resume_point(const std::string& dir, const Config& current);

}  // namespace unitrain
