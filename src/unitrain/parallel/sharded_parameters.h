#pragma once
// ShardedParameters: ZeRO stage 3's parameters (FSDP's flat parameters) — each rank keeps one
// equal part of every unit's parameters; a unit's whole parameters exist only between gather()
// and release().
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "unitrain/core/shard_layout.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/shard_ordered_reduce.h"

namespace unitrain {

/// The model's parameters in units (a transformer block; the rest of the model). Within a unit,
/// the parameters of one dtype and one `key` (e.g. their optimizer group) are laid end to end,
/// in the given order, in a flat buffer padded with zeros to a multiple of the world size; rank r
/// keeps elements [r * n, (r + 1) * n) of it (n = padded length / world): its shard, a 1-D leaf
/// tensor that the optimizer steps and whose .grad is its part of the gradient. The layout is a
/// function of the parameters' shapes, dtypes, units, keys and the world size alone.
///
/// Each parameter stays the same tensor (modules, hooks and names keep working) but its values
/// are a view of its flat's whole buffer, whose memory exists only from gather(unit) to
/// release(unit): outside that, reading a parameter's values is an error of the caller's
/// (their shapes stay). Views autograd saved in forward see the values again once the unit is
/// gathered for backward (the memory is re-made under the same storage, as FSDP does).
///
/// Every rank must construct it with the same parameters (after broadcast_module: the shards
/// are cut from this rank's values; parameters of a model built in parts are gathered from
/// every rank's part first, one unit at a time: restore_kept_parts) and call
/// gather/release/reduce_gradients in the same order (they are collectives, except release).
class ShardedParameters {
 public:
  /// `names`: the parameters' names (checkpoints' layouts), or empty.
  /// `micro_shards` > 0 (distributed.reproducible's G): each member starts at a multiple of 64
  /// elements of its flat, each flat is padded to G chunks (MicroShardLayout: parts of G / W
  /// chunks, boundaries that no world size moves), and reduce_gradients() sums the micro-shards
  /// in shard order (ShardOrderedReduce) instead of reduce-scattering each.
  ShardedParameters(
      std::shared_ptr<ProcessGroup> group, std::vector<torch::Tensor> params,
      const std::vector<int>& unit_of, const std::vector<int>& key_of,
      std::vector<std::string> names = {},
      ProcessGroup::ReduceScatterBy reduce_by = ProcessGroup::ReduceScatterBy::PartReduces,
      int micro_shards = 0);
  ~ShardedParameters();
  ShardedParameters(const ShardedParameters&) = delete;
  ShardedParameters& operator=(const ShardedParameters&) = delete;

  int units() const { return static_cast<int>(unit_flats_.size()); }
  /// The tensors the optimizer steps: this rank's shard of each flat, by unit, then key and
  /// dtype in order of first appearance.
  const std::vector<torch::Tensor>& shards() const { return shards_; }
  /// Each shard's key (key_of of its parameters).
  std::vector<int> shard_keys() const;
  /// The unit's whole parameters from every rank's shards; its parameters hold their values
  /// until release(unit). Gathering a gathered unit does nothing.
  void gather(int unit);
  /// Launches the unit's gather without waiting for it: gather(unit) then only waits (ZeRO 3's
  /// prefetch of the next unit while this one computes). Does nothing to a gathered unit or one
  /// already launched. The shards must not change until it is waited for.
  void prefetch(int unit);
  /// Frees the memory of the unit's whole parameters (after waiting for its prefetch, if one is
  /// in flight).
  void release(int unit);
  /// Every unit released (prefetches in flight waited for first): nothing gathered is left to
  /// go stale when the shards change.
  void release_all();
  bool gathered(int unit) const;
  /// After the unit's backward: its parameters' gradients (whole, as backward left them; an
  /// undefined one counts as zeros) summed over ranks and divided by `divisor`; this rank's part
  /// is added to its shards' .grad (made when undefined: gradients accumulate over
  /// micro-batches), and the whole gradients are freed.
  void reduce_gradients(int unit, double divisor);
  /// distributed.reproducible: after the window's last micro-shard, each shard's .grad is this
  /// rank's part of the sum over the G micro-shards in shard order (the first micro-step's
  /// backward starts a window; `divisor` must be 1: the loss carries 1 / G).
  /// The gradients' norm as ParameterBlockSquares takes it over the parameters that train,
  /// numbered by `norm_order` (per parameter, its place among the model's parameters that
  /// train, -1 for one that does not), from this rank's parts (a collective).
  void order_norm_by(std::vector<int64_t> norm_order) { norm_order_ = std::move(norm_order); }
  double reproducible_norm() const;
  /// Every parameter whole again, in memory of its own (a collective: each unit gathered in
  /// turn): the module works without this object from then on. Its shards stay as they were.
  void unshard();
  /// The flats, their members and parts, for checkpoints (ShardLayout::world_size: this run's).
  ShardLayout layout() const;
  /// This rank's parts, from the whole values of every parameter by name (a checkpoint of
  /// another world size or layout, or a whole model.pt); TrainError naming `what` and the
  /// parameter when one is missing or of another shape. Units must be released.
  void load_whole(const std::map<std::string, torch::Tensor>& state, const std::string& what);
  /// This rank's part of each flat, in shards() order, cut from the whole values of every
  /// parameter by name as load_whole does, as new tensors of `dtype` (floating flats; the others
  /// keep their own dtype): the float32 masters of bf16-true's shards, the parts of an average.
  /// `frozen_too` false: the flats that do not train (and no optimizer group holds) are not cut
  /// (undefined tensors; `state` need not hold their parameters: LoRA's base, which a checkpoint
  /// does not hold).
  std::vector<torch::Tensor> cut(const std::map<std::string, torch::Tensor>& state,
                                 const std::string& what, c10::ScalarType dtype,
                                 bool frozen_too = true) const;
  /// The whole tensors, by parameter name, of `parts` laid out as shards() (one per shard, any
  /// floating dtype: e.g. an average of the shards), gathered from every rank (a collective).
  std::map<std::string, torch::Tensor> gather_whole(const std::vector<torch::Tensor>& parts) const;
  /// Bytes of this rank's shards (what it keeps of the parameters).
  int64_t shard_bytes() const;
  /// Bytes of the whole parameters (what plain data parallelism keeps on every rank).
  int64_t whole_bytes() const;

 private:
  struct Flat;
  /// Memory of `bytes` from the spares (or the allocator), and back: a unit's gather and its
  /// gradients' flat reuse the memory of the unit before instead of fresh pages from the kernel,
  /// which cost a page fault each (3 steps of examples/zero3_memory at W = 2 made 2.3 million
  /// more page faults without; docs/performance.md). At most kSpares are kept.
  at::DataPtr take_spare(size_t bytes, c10::Allocator* allocator);
  void give_spare(size_t bytes, at::DataPtr memory);
  /// free_tensor_memory / make_tensor_memory (core/unit_parts.h) through the spares.
  void give_memory(const torch::Tensor& t);
  void take_memory(const torch::Tensor& t);
  /// `flat`'s elements of this rank's part from the whole values in `state`, into `part`.
  void copy_part(const Flat& flat, const std::map<std::string, torch::Tensor>& state,
                 const std::string& what, torch::Tensor part) const;
  std::shared_ptr<ProcessGroup> group_;
  std::vector<torch::Tensor> params_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<Flat>> flats_;
  std::vector<std::vector<size_t>> unit_flats_;  ///< each unit's flats, by index into flats_
  std::vector<torch::Tensor> shards_;
  std::vector<bool> gathered_;
  std::vector<std::vector<std::function<void()>>> in_flight_;  ///< per unit: prefetch waits
  ProcessGroup::ReduceScatterBy reduce_by_;
  int micro_shards_ = 0;  ///< distributed.reproducible's G; 0: off
  /// Per flat (distributed.reproducible, trained flats): its sum in shard order, else null.
  std::vector<std::unique_ptr<ShardOrderedReduce>> ordered_;
  std::vector<int64_t> norm_order_;
  static constexpr size_t kSpares = 2;
  std::vector<std::pair<size_t, at::DataPtr>> spare_;  ///< freed memory by bytes, oldest first
};

/// The parameters among `params` that a model built in parts keeps (core/unit_parts.h) given
/// their whole values again, in memory of their own, gathered from every process's part, one
/// kept flat at a time (a collective: every rank calls it with the same parameters). Others are
/// left as they are. ShardedParameters does it unit by unit as it cuts its shards; a run that
/// does not shard (another distributed.zero, a GPU, bf16-true) does it for the whole model at
/// its start.
void restore_kept_parts(ProcessGroup& group, const std::vector<torch::Tensor>& params);

}  // namespace unitrain
