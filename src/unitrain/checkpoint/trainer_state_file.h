#pragma once
// TrainerStateFile: trainer_state.json, a checkpoint's counters and loop state, read and written
// by this one type (the trainer, `unitrain eval`/`export`, `checkpoint inspect`, the report).
#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include "unitrain/core/train_state.h"
#include "unitrain/data/permutation.h"

namespace unitrain {

/// One running sum of a training metric (MetricAccumulator::Sum), summed over ranks.
struct SavedSum {
  double weighted = 0;
  double weight = 0;
  bool exp_of_mean = false;
};

/// What trainer_state.json holds. JSON has no NaN or infinity: such values are written as the
/// strings "nan", "inf", "-inf" and read back; finite doubles round-trip exactly.
struct TrainerStateFile {
  static constexpr int kFormat = 1;

  std::string config_hash;   ///< CRC-32 of the config it trained with, hex
  int64_t world_size = 1;    ///< processes that wrote it
  int64_t batch_size = 0;    ///< per process, as it trained (0: not recorded)
  int64_t accumulation = 0;  ///< micro-batches per step, as it trained (0: not recorded)
  int64_t zero = 0;          ///< distributed.zero of a sharded save (optimizer-rank-<R>.pt)
  int64_t threads = 0;       ///< intra-op threads it computed with (0: not recorded)
  TrainState state;          ///< the run's counters
  bool stopped = false;      ///< a stop was decided (early stopping): the run is finished
  /// The algorithm of the run's shuffled orders and random split (`data_order`, with the data
  /// position): files written before it was recorded used Fisher-Yates.
  ShuffleAlgorithm data_order = ShuffleAlgorithm::FisherYates;
  /// The last metrics logged, so that a finished run describes itself when resumed.
  std::map<std::string, double> last_train, last_val;
  // The loop's own state.
  int64_t log_events = 0;      ///< events in metrics.jsonl when it was saved
  int64_t last_val_step = -1;  ///< the step of the last validation pass
  double elapsed = 0;          ///< seconds of training so far
  double best_value = std::numeric_limits<double>::quiet_NaN();  ///< checkpoint.best.metric's
  bool window_bad = false;  ///< a non-finite loss earlier in the open window (skip mode)
  std::map<std::string, SavedSum> train_sums;  ///< the training metrics not yet logged
  std::map<std::string, double> scheduler;     ///< the schedule's own state

  /// The file's text (indented JSON, a newline at the end).
  std::string to_json() const;
  /// {"train": {...}, "val": {...}}: the last metrics as JSON text, as the file holds them.
  std::string metrics_json() const;
  /// Parses the text of `where` (a path, for messages); TrainError when it is not a
  /// trainer_state.json of this format.
  static TrainerStateFile parse(const std::string& text, const std::string& where);
  /// Reads and parses checkpoint folder `dir`'s file (its size and CRC checked).
  static TrainerStateFile read(const std::string& dir);
};

}  // namespace unitrain
