#pragma once
// ShardOrderedReduce: distributed.reproducible's gradient reduction — the sum over a step's G
// micro-shards taken in global shard order whatever the world size W, so that the gradient, its
// norm and the logged sums are bitwise those of one process accumulating G micro-batches.
//
// Design (issue 51).
// - Layout (MicroShardLayout): the flat gradient is padded to G chunks of equal length (a
//   multiple of 64 elements) fixed by its size and G alone; rank r owns chunks
//   [r G/W, (r+1) G/W), a contiguous slice. Rank r runs shard i W + r at micro-step i.
// - Order of additions: at micro-step i every rank sends each owner its slice of the shard it
//   ran (one all-to-all); the owner receives shards i W + 0, ..., i W + W - 1 and adds them, in
//   that order, into its accumulator: over the G / W micro-steps, shards 0, 1, ..., G - 1.
//   Shard 0 is copied, not added to zeros (0 + -0 is +0), and every later shard is one
//   elementwise add_ — autograd's accumulation of G micro-batches (grad = g0; grad += g1; ...).
//   Each element's sum is the same sequence of float additions for every W.
// - Norm (ParameterBlockSquares): each parameter's gradient in blocks of 64 elements, each
//   block's squares summed in float64 in index order, the blocks added in a fixed order of the
//   parameters: the same double whether the gradient is whole or in ZeRO 3's parts, on any W.
// - Scalars (losses, metric sums): every shard's values are gathered and added in shard order.
// - Parameters: each rank updates its owned slice, then one all-gather (gather_owned()).
// - Cost, per rank, for a flat gradient of P padded elements of b bytes: each micro-step's
//   all-to-all sends (W - 1) / W x P x b (and receives as much) — what one reduce-scatter (ZeRO
//   2) sends; a step of G / W micro-steps sends G (W - 1) / W^2 x P x b, then the all-gather
//   (W - 1) / W x P x b. DDP sends 2 (W - 1) / W x P x b per step (a ring all-reduce, once: no
//   reduce on accumulation micro-steps), as unitrain's ZeRO 2 sends about (W - 1) / W x P x b
//   in reduces plus its gather. So with G = W (no accumulation) it costs what DDP costs; each
//   further micro-step adds one reduce-scatter's worth. No exact scheme sends less: shards of one
//   owner are never adjacent in the order (interleaved), and a partial sum of non-adjacent shards
//   is not a prefix of the sequential sum, so every shard's slice must reach its owner. Memory:
//   a receive buffer of P and an accumulator of P / W elements.
// The engine's side (docs/distributed.md, "The same weights on any number of processes"):
// ReproducibleSync lays each shard's gradient out flat from no gradient and gathers the sum
// whole for clipping and the optimizer (ZeRO 0-2); ShardedParameters sums each unit's parts so
// under ZeRO 3 (members 64-aligned, the fused Adam on the parts); LoopData reads whole batches
// and weighs each by 1 / G; TrainLoop seeds every micro-shard's draws from (seed, step, shard);
// ShardOrderedMetrics and ShardOrderedLoss order the logged sums and the divergence guard's loss;
// reproducible_checks refuses batch norm and what else would depend on W.
#include <torch/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "unitrain/parallel/micro_shard_layout.h"
#include "unitrain/parallel/step_decision.h"

namespace unitrain {

class ProcessGroup;

/// A rank's accumulator of the step's gradient over its owned slice. Every rank calls add() (or
/// start() and finish_add()) once per micro-step: they are collectives.
class ShardOrderedReduce {
 public:
  /// The gradient in `dtype` (float32; bfloat16 where the parameters are), on the group's device.
  /// `keep_buffer` false: the receive buffer (padded_numel()) is made for each add() and freed
  /// after it (ZeRO 3: one unit's at a time), instead of kept.
  ShardOrderedReduce(std::shared_ptr<ProcessGroup> group, MicroShardLayout layout,
                     c10::ScalarType dtype, bool keep_buffer = true);
  /// One process without a group (`layout`'s world of 1): the same sums, on `device`.
  ShardOrderedReduce(MicroShardLayout layout, c10::ScalarType dtype, const torch::Device& device);

  const MicroShardLayout& layout() const { return layout_; }
  /// Micro-step micro_steps_done(): this rank's shard's flat gradient (shard
  /// layout().shard_at(micro_steps_done(), rank)), of the reduce's dtype, padded_numel() long
  /// (padding zeros), or numel() long (padded in a copy). A collective: the all-to-all, then the
  /// adds. The first add() after complete() starts the next step.
  void add(const torch::Tensor& shard_gradient);
  /// add() in two halves: start() launches the exchange (`shard_gradient` must live and not
  /// change until finish_add()), finish_add() waits for it and adds; between them this rank may
  /// compute the next micro-shard. One exchange in flight at a time.
  void start(const torch::Tensor& shard_gradient);
  void finish_add();
  /// An exchange was started and not finished.
  bool in_flight() const { return static_cast<bool>(wait_); }
  int micro_steps_done() const { return done_; }
  /// Every micro-step of the step added: owned_gradient() holds the sum over shards 0..G-1.
  bool complete() const { return done_ == layout_.micro_steps(); }
  /// This rank's slice [owned_offset(), + owned_numel()) of the sum of the step's shard
  /// gradients, in global shard order (valid once complete()).
  torch::Tensor& owned_gradient() { return owned_; }
  /// Bytes this rank sends others per micro-step: (W - 1) x owned_numel() x element size.
  int64_t bytes_sent_per_micro_step() const;

 private:
  std::shared_ptr<ProcessGroup> group_;  ///< null: one process
  MicroShardLayout layout_;
  torch::Tensor received_;  ///< padded_numel(): every rank's shard, this rank's slice of each
  torch::Tensor owned_;     ///< owned_numel(): the sum so far
  int done_ = 0;
  bool keep_buffer_ = true;
  torch::Tensor mine_;          ///< start()'s shard gradient (padded) until finish_add()
  std::function<void()> wait_;  ///< start()'s exchange; null: none in flight
};

/// distributed.reproducible's gradient norm, the same double however the gradients are laid
/// out (whole on every rank, or cut into ZeRO 3's parts): each parameter's gradient is cut into
/// blocks of kBlock elements from its first, each block's squares summed in float64 in index
/// order (a float32 or bfloat16 value's square is exact in float64), and the blocks added in
/// order, parameter by parameter in a fixed order (the model's parameters that train).
class ParameterBlockSquares {
 public:
  static constexpr int64_t kBlock = 64;
  /// `numels`: each parameter's elements, in that order.
  explicit ParameterBlockSquares(const std::vector<int64_t>& numels);
  /// The blocks of elements [first, first + values.numel()) of parameter `param` (`first` a
  /// multiple of kBlock; the values end at a block's end or the parameter's).
  void add(size_t param, int64_t first, const torch::Tensor& values);
  /// Each block summed over `group` (each added by one of its ranks; adding zeros changes no
  /// bits): a group of the model's processes before norm() over another.
  void sum_over(ProcessGroup* group);
  /// The L2 norm. With a `group`, each block was added by one rank: the blocks are summed over
  /// ranks first (one all-reduce; adding zeros changes no bits). Clears the blocks.
  double norm(ProcessGroup* group);

 private:
  std::vector<int64_t> first_block_;  ///< per parameter, its first block's index
  std::vector<double> blocks_;
};

/// distributed.reproducible's agreed window loss (train.divergence's spike check): each
/// micro-shard's share of the window's mean loss, as this rank ran them, summed over every
/// rank in global shard order: the same double on every world size.
class ShardOrderedLoss {
 public:
  explicit ShardOrderedLoss(int micro_shards) : micro_shards_(micro_shards) {}
  /// This rank's shares of the window, in its order (G / W of them).
  void share(std::vector<double> shares) { shares_ = std::move(shares); }
  /// Their sum over every rank in shard order, when this window shared any (train.divergence
  /// watches spikes: then every rank did, and this is a collective with a `group`); clears the
  /// shares.
  void agree(ProcessGroup* group);
  /// `d` with the agreed sum as its loss, when the last agree() made one.
  StepDecision applied_to(StepDecision d) const;

 private:
  int micro_shards_;
  std::vector<double> shares_;
  std::optional<double> agreed_;
};

/// The sums over the step's G shards, in shard order (the first copied, then added), of
/// per-shard values: `mine[i]` holds this rank's values (as many on every shard and rank) for
/// shard layout.shard_at(i, rank), i in [0, micro_steps()). The same doubles on every rank and
/// every W. A collective (an all-gather); `group` null: one process (`layout`'s world of 1).
std::vector<double> sum_in_shard_order(ProcessGroup* group, const MicroShardLayout& layout,
                                       const std::vector<std::vector<double>>& mine);

/// Every rank's owned slice of `flat` (padded_numel() long, contiguous: the parameters after each
/// rank updated its own slice) into every rank's `flat`, in place. A collective.
void gather_owned(ProcessGroup& group, const MicroShardLayout& layout, torch::Tensor& flat);

}  // namespace unitrain
