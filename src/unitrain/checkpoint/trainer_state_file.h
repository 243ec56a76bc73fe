#pragma once
// TrainerStateFile: trainer_state.json, a checkpoint's identity, counters and the entries' keyed
// state, read and written by this one type (the trainer, `unitrain eval`/`export`, `checkpoint
// inspect`, the report).
#include <cstdint>
#include <map>
#include <string>

#include "unitrain/core/train_state.h"
#include "unitrain/data/permutation.h"

namespace unitrain {

/// What trainer_state.json holds: who wrote it (identity), the run's counters and the last
/// metrics it logged (what `checkpoint inspect`, the report and a finished run describe it
/// with), and each entry's own state in a section under the entry's key (as torchtitan's
/// Stateful entries: "logs", "nonfinite", "checkpoints", "schedule", a program's own), which
/// only that entry reads. JSON has no NaN or infinity: such values are written as the strings
/// "nan", "inf", "-inf" and read back; finite doubles round-trip exactly.
struct TrainerStateFile {
  /// 2: the entries' state in `sections`. Version 1 files (the loop's and the schedule's state
  /// in "loop" and "scheduler") are read into the same sections.
  static constexpr int kFormat = 2;

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

  /// The section `key` as compact JSON text (an object), or "" when the file has none.
  std::string section(const std::string& key) const;
  /// Sets section `key` to `json` (the text of a JSON object). TrainError when another entry
  /// set the same key in this save, or `json` is not an object.
  void set_section(const std::string& key, const std::string& json);
  const std::map<std::string, std::string>& sections() const { return sections_; }

  /// The file's text (indented JSON, a newline at the end).
  std::string to_json() const;
  /// {"train": {...}, "val": {...}}: the last metrics as JSON text, as the file holds them.
  std::string metrics_json() const;
  /// Parses the text of `where` (a path, for messages); TrainError when it is not a
  /// trainer_state.json of this format or the one before.
  static TrainerStateFile parse(const std::string& text, const std::string& where);
  /// Reads and parses checkpoint folder `dir`'s file (its size and CRC checked).
  static TrainerStateFile read(const std::string& dir);

 private:
  std::map<std::string, std::string> sections_;  ///< key -> a JSON object's compact text
};

}  // namespace unitrain
