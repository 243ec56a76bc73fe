#pragma once
// CheckpointEntry: one part of the run's state that a checkpoint holds (the model, the optimizer,
// the generators, a callback's ...), bringing its own save and restore.
#include <memory>
#include <string>
#include <vector>

#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/trainer_state_file.h"

namespace unitrain {

class SnapshotBuffers;

/// What one save collects from the entries: files for the step folder, and in its
/// trainer_state.json each entry's section (TrainerStateFile::set_section) — the built-in
/// logs fill its last metrics too.
struct CheckpointWrite {
  bool writes = false;  ///< this process writes the checkpoint (rank 0); others only take part
  bool async = false;   ///< tensors are snapshotted into `buffers` and serialised later
  SnapshotBuffers* buffers = nullptr;
  std::vector<CheckpointFile> files;
  TrainerStateFile state;

  void add(std::string name, const std::string& bytes) {
    files.push_back({std::move(name), FileImage(std::vector<char>(bytes.begin(), bytes.end()))});
  }
};

/// The checkpoint a run resumes from, as the entries read it.
struct CheckpointRead {
  std::string dir;                ///< the checkpoint folder
  const TrainerStateFile& state;  ///< its trainer_state.json, read once
  int rank = 0;                   ///< this process's rank in the resumed run

  bool has(const std::string& name) const;
  /// The file's bytes (size and CRC checked against the manifest).
  std::vector<char> read(const std::string& name) const;
  /// The file mapped read-only (checked as read() checks it): its pages are read when touched.
  MappedFile map(const std::string& name) const;
  std::string path(const std::string& name) const { return dir + "/" + name; }
};

/// A part of a checkpoint. save() runs on every rank, entry by entry in the same order (an
/// entry may take part in collectives there); only the writing rank's files are written.
/// restore() runs on every rank of the resumed run.
class CheckpointEntry {
 public:
  virtual ~CheckpointEntry() = default;
  virtual void save(CheckpointWrite& out) = 0;
  virtual void restore(const CheckpointRead& in) = 0;
  /// The names of the files save() writes, when known before the run (a program's entry
  /// declares them): one that a built-in entry or another declared entry writes is refused
  /// when fit() starts, before the run folder changes, instead of at the first save.
  virtual std::vector<std::string> files() const { return {}; }
};

using CheckpointEntryPtr = std::unique_ptr<CheckpointEntry>;

}  // namespace unitrain
