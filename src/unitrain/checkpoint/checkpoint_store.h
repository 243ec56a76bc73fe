#pragma once
// CheckpointStore: the on-disk protocol of run_dir/checkpoints/ — complete-or-ignored folders.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/checkpoint/file_image.h"
#include "unitrain/core/mapped_file.h"

namespace unitrain {

/// One file of a checkpoint: its image, or a function that serialises a snapshot into one
/// (called by the Checkpointer just before writing, on its background thread for async saves).
struct CheckpointFile {
  std::string name;  ///< file name inside the step folder, e.g. "model.pt"
  FileImage image;
  // `{}`: brace-initialised files may leave the fields below out (-Wmissing-field-initializers).
  std::function<FileImage()> produce{};  ///< when set, replaces `image` before writing
  /// When set, a file another process wrote and synced already (a ZeRO rank's optimizer
  /// partition), moved into the folder instead of written, and listed with these:
  std::string move_from{};
  uint64_t moved_size = 0;
  uint32_t moved_crc32 = 0;
};

/// A complete checkpoint folder found on disk.
struct CheckpointRef {
  std::string dir;  ///< e.g. runs/x/checkpoints/step-120
  int64_t step = 0;
};

/// The checkpoints of one run under `root` (run_dir/checkpoints):
///   step-<S>/            one folder per checkpoint; MANIFEST.json (file sizes, CRC-32s) is written
///                        last, so a folder without a valid manifest is not a checkpoint
///   .partial-step-<S>-<pid>@<host>  a folder being written (write, fsync, then rename to
///                        step-<S>); its name says which process writes it
///   last, best           symbolic links to step folders, replaced atomically
/// A save never touches an existing complete checkpoint until the new one is complete.
/// I/O failures throw TrainError naming the path; nothing older is lost.
class CheckpointStore {
 public:
  explicit CheckpointStore(std::string root);

  const std::string& root() const { return root_; }

  /// Writes `files` as step-<step>/ (replacing an older folder of that step only once the
  /// new one is complete) and returns its path.
  std::string save(int64_t step, const std::vector<CheckpointFile>& files) const;

  /// Writes `files` as a new complete checkpoint folder `dir` anywhere (written beside it as
  /// `<dir>.partial-<pid>`, manifest last, then renamed); TrainError when `dir` exists.
  static std::string write_new(const std::string& dir, int64_t step,
                               const std::vector<CheckpointFile>& files);

  /// Complete checkpoints (manifest present, every file of the listed size), oldest first.
  /// Checksums are not read here: load() verifies them.
  std::vector<CheckpointRef> list() const;
  /// Every step-<S> folder, complete or not (a damaged one: a file truncated, missing or
  /// rewritten since its save), oldest first: what verify() judges.
  std::vector<CheckpointRef> step_folders() const;

  /// Full check of a folder: manifest, sizes and checksums. Returns "" when valid, else what
  /// is wrong, naming the file.
  static std::string verify(const std::string& dir);

  /// The bytes of `name` in checkpoint `dir`, checked against the manifest; TrainError naming
  /// the file when it is missing, truncated or corrupt.
  static std::vector<char> read(const std::string& dir, const std::string& name);
  /// `name` in checkpoint `dir` mapped read-only (checked as read() checks it, reading it a few
  /// MiB at a time): its pages are read when touched, so a reader that needs part of a large
  /// file holds only that part.
  static MappedFile map(const std::string& dir, const std::string& name);
  /// The files the manifest of `dir` lists, with their sizes, in its order; empty when it has
  /// no valid manifest.
  static std::vector<std::pair<std::string, uint64_t>> files_of(const std::string& dir);
  /// True when the manifest of `dir` lists `name`.
  static bool has(const std::string& dir, const std::string& name);

  /// Points the link `name` ("last", "best") at `dir`, atomically.
  void link(const std::string& name, const std::string& dir) const;
  /// The folder a link points to, or "" when it is missing or dangling.
  std::string resolve_link(const std::string& name) const;

  /// Removes all but the newest `keep_last` complete checkpoints, never removing `keep`
  /// (the best one) or a link's target. keep_last <= 0 keeps everything.
  void prune(int64_t keep_last, const std::string& keep) const;
  /// Removes folders left by interrupted saves; returns how many. Call it only while holding
  /// the run folder's lock (RunDirLock). A `.partial-` entry whose writer (named by its
  /// writer_tag) is a live process of this machine other than this one is left alone and
  /// listed in `in_use`.
  int remove_partial(std::vector<std::string>* in_use = nullptr) const;
  /// "<pid>@<host>": ends the name of every `.partial-` entry this process writes, so that
  /// remove_partial can tell whether its writer is gone.
  static std::string writer_tag();
  /// True when the `.partial-` entry `name` (a file name, no folder) was written by a process
  /// of this machine, other than this one, that is still running.
  static bool writer_alive(const std::string& name);

  /// The step a folder name `step-<S>` stands for, or -1.
  static int64_t step_of(const std::string& dir);

 private:
  std::string root_;
};

}  // namespace unitrain
