#pragma once
// Checkpointer: writes checkpoints (now or on a background thread), keeps the last/best links,
// prunes, and finds the checkpoint to resume from.
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
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
  /// Runs first, before any file is produced: for async saves, on the writer thread while
  /// training goes on — the copies of tensors training leaves alone until its next update
  /// (see Checkpointer::wait_snapshot).
  std::function<void()> snapshot;
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
  /// Waits until the pending save's `snapshot` has run (training calls this before it changes
  /// what the snapshot copies: before each optimizer step). Returns at once when none is
  /// pending; a failed snapshot surfaces at wait().
  void wait_snapshot();
  /// Seconds the caller spent inside save() (snapshot hand-over, or the whole write when
  /// synchronous) and in wait_snapshot(), and seconds spent writing, summed over saves.
  double blocking_seconds() const { return blocking_seconds_ + snapshot_wait_seconds_; }
  double snapshot_wait_seconds() const { return snapshot_wait_seconds_; }
  double write_seconds() const { return write_seconds_; }
  int64_t saves() const { return saves_; }

  /// The checkpoint folder `resume` (auto | none | last | best | <path>) points to, or "" for
  /// a fresh start. auto takes the newest valid checkpoint: each newer one it skips (damaged:
  /// a file truncated, missing or corrupt) is warned about, naming the folder and why, or
  /// added to `skipped` when given (a caller that looks before the run, quietly); an explicit
  /// choice that is missing or invalid is a ConfigError naming the file.
  std::string find_resume(const std::string& resume,
                          std::vector<std::string>* skipped = nullptr) const;

  const CheckpointStore& store() const { return store_; }

 private:
  void write(CheckpointSave& save);
  void run_snapshot(CheckpointSave& save);
  void snapshot_finished();
  CheckpointOptions options_;
  CheckpointStore store_;
  std::thread worker_;
  std::exception_ptr failure_;
  std::mutex snapshot_mutex_;
  std::condition_variable snapshot_done_;
  bool snapshot_pending_ = false;
  double snapshot_wait_seconds_ = 0;
  int64_t pending_step_ = -1;
  double blocking_seconds_ = 0;
  double write_seconds_ = 0;
  int64_t saves_ = 0;
};

}  // namespace unitrain
