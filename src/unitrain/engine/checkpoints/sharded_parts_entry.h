#pragma once
// ShardedPartsEntry: what distributed.zero: 3's checkpoint entries share (the model's parts,
// sharded_model_entry.cpp; a callback's per-parameter state by parts, sharded_state_entry.cpp):
// every rank's file of its parts of each flat, rank 0's with the tensors outside the units
// whole, and their restore at the same or another world size and layout. Private to
// engine/checkpoints.
#include <torch/types.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/checkpoint/model_shards.h"
#include "unitrain/engine/checkpoint_entry.h"

namespace unitrain {

class ProcessGroup;
class ShardedParameters;
class TrainModule;

namespace sharded_parts {

using Named = std::vector<std::pair<std::string, torch::Tensor>>;

/// `tensors` by name.
std::map<std::string, torch::Tensor> by_name(NamedTensors tensors);
/// The module's parameters no unit holds (none of `params`' flats), by name, in module order:
/// rank 0 saves them whole, and the ema callback averages them after the shards.
Named parameters_outside_units(TrainModule& module, const ShardedParameters& params);

}  // namespace sharded_parts

/// What both entries share: every rank's file of parts (`file_of`), rank 0's with the whole
/// tensors outside the units; restored from this rank's own file at the same world size and
/// layout, else cut from the merged parts, else from a whole dict (`whole_source`).
class ShardedPartsEntry : public CheckpointEntry {
 public:
  ShardedPartsEntry(ShardedParameters& params, ProcessGroup& group, std::string root,
                    ShardFileName file_of, std::string kind, std::string what)
      : params_(params),
        group_(group),
        root_(std::move(root)),
        file_of_(file_of),
        kind_(std::move(kind)),
        what_(std::move(what)) {}

  void save(CheckpointWrite& out) override;
  void restore(const CheckpointRead& in) override;

 protected:
  /// Per flat, the tensor saved as its part and restored in place.
  virtual std::vector<torch::Tensor> parts() = 0;
  /// The tensors outside the units, whole, by name (rank 0 saves them).
  virtual sharded_parts::Named outside() = 0;
  /// A tensor of outside() as the file holds it.
  virtual torch::Tensor saved_form(const torch::Tensor& t) { return t.detach(); }
  /// More entries of this rank's file (the model's gradients inside a window).
  virtual void add_to_file(NamedTensors& mine) {}
  /// The model-shards.json layout, written once (the model's entry).
  virtual void add_layout(CheckpointWrite& out) {}
  /// From the checkpoint's own file of parts: its other entries.
  virtual void restore_more(const std::map<std::string, torch::Tensor>& own) {}
  /// Before re-cutting parts of another world size or layout.
  virtual void check_recut(const CheckpointRead& in, const ShardLayout& saved) {}
  /// A checkpoint without parts of this kind: `whole` (by name) from its whole dict (mapped:
  /// only this rank's elements are read), cut into `into`; false when there is nothing to
  /// restore from.
  virtual bool restore_whole(const CheckpointRead& in, const std::vector<torch::Tensor>& into,
                             std::map<std::string, torch::Tensor>& whole) = 0;
  /// After everything was restored.
  virtual void restored() {}
  /// Whether the checkpoint holds the frozen flats' parts (not LoRA's base: saves_part).
  virtual bool saves_frozen() const { return true; }

  /// Whether flat `i`'s parts are saved: all but the frozen ones (which train not and no
  /// optimizer group holds) when !saves_frozen(); those keep what the run built (the base).
  bool saves_part(size_t i) const;

  /// `whole` (by name) cut into `into`, this rank's parts (the frozen ones when saved).
  void cut_into(const std::vector<torch::Tensor>& into,
                const std::map<std::string, torch::Tensor>& whole, const std::string& what);

  ShardedParameters& params_;
  ProcessGroup& group_;

 private:
  /// This rank's own file (the same layout and world size) into `into`; the file's entries.
  std::map<std::string, torch::Tensor> restore_own_parts(const CheckpointRead& in,
                                                         const std::vector<torch::Tensor>& into);

  std::string root_;
  ShardFileName file_of_;
  std::string kind_, what_;
};

}  // namespace unitrain
