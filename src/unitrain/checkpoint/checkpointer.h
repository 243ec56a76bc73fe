#pragma once
// Checkpointer: writes checkpoints (now or on a background thread), keeps the last/best links,
// prunes, and finds the checkpoint to resume from.
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "unitrain/checkpoint/checkpoint_options.h"
#include "unitrain/checkpoint/checkpoint_store.h"

namespace unitrain {

/// One save: the files (serialised, or snapshots serialised by the writer) and where it stands.
struct CheckpointSave {
  int64_t step = 0;
  std::vector<CheckpointFile> files;
  bool best = false;  ///< point the `best` link at it
};

/// Owns the saves of one run into `root` (run_dir/checkpoints). With `async`, save() returns
/// once the snapshot is handed over; the write runs on a background thread, the next save (and
/// wait()) waits for it, and a failed background write is rethrown there as a TrainError
/// naming the checkpoint. The destructor waits for a pending write but never throws.
class Checkpointer {
 public:
  Checkpointer(const CheckpointOptions& options, std::string root);
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  /// Removes folders left by interrupted saves (a warning names how many).
  void clean_partial();
  void save(CheckpointSave save);
  /// Waits for a background write; rethrows its failure.
  void wait();
  /// Seconds the caller spent inside save() (snapshot hand-over, or the whole write when
  /// synchronous) and seconds spent writing, summed over saves.
  double blocking_seconds() const { return blocking_seconds_; }
  double write_seconds() const { return write_seconds_; }
  int64_t saves() const { return saves_; }

  /// The checkpoint folder `resume` (auto | none | last | best | <path>) points to, or "" for
  /// a fresh start. auto skips invalid checkpoints with a warning; an explicit choice that is
  /// missing or invalid is a ConfigError naming the file.
  std::string find_resume(const std::string& resume) const;

  const CheckpointStore& store() const { return store_; }

 private:
  void write(CheckpointSave& save);
  CheckpointOptions options_;
  CheckpointStore store_;
  std::thread worker_;
  std::exception_ptr failure_;
  int64_t pending_step_ = -1;
  double blocking_seconds_ = 0;
  double write_seconds_ = 0;
  int64_t saves_ = 0;
};

}  // namespace unitrain
