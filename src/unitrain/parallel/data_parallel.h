#pragma once
// Data parallelism over a ProcessGroup: identical starting weights on every rank, and gradients
// all-reduced in buckets launched from autograd hooks while backward is still running.
#include <torch/nn/module.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "unitrain/parallel/gradient_sync.h"
#include "unitrain/parallel/process_group.h"

namespace torch::autograd {
struct Node;
}

namespace unitrain {

/// Checks that every rank has the same parameter and buffer names, shapes and dtypes (a
/// ConfigError naming the first difference and the ranks, never a hang), then copies rank 0's
/// values to every rank.
void broadcast_module(ProcessGroup& group, torch::nn::Module& module);

/// Rank 0's buffers (batch-norm statistics...) to every rank.
void broadcast_buffers(ProcessGroup& group, torch::nn::Module& module);

struct DataParallelOptions {
  double bucket_mb = 25;  ///< gradient bytes per all-reduce
  /// A parameter may get no gradient in a window (on some or all ranks). Each rank says so in
  /// the window's decision; in a window where one did, one more small all-reduce finds those no
  /// rank used, which then get no gradient: the optimizer skips them, as in one process. This
  /// says it is expected: false warns once (rank 0), naming them.
  bool find_unused_parameters = false;
  /// The parameters' names, for that warning (empty: by index).
  std::vector<std::string> names;
  /// Gradients become views of the buckets after finish() (backward then accumulates straight
  /// into them; the step runner zeroes them in place). False: each gets a tensor of its own, as
  /// a module that steps its own optimizers expects (their zero_grad() detaches in place), and
  /// one no rank used in the window keeps the gradient it had.
  bool gradient_views = true;
  /// Divide the summed gradients by the number of ranks in finish(). The Trainer turns this
  /// off and scales each rank's loss by 1/ranks instead: the same average, one pass over the
  /// gradients less.
  bool average = true;
  /// ZeRO stage 2: the owner rank of each parameter (by index into the parameter list; see
  /// partition_contiguous). Each bucket then holds one owner's parameters and is reduced to
  /// that rank only; the other ranks free their copies of its gradients as soon as the bucket
  /// is launched and its buffer once the reduce is done. Empty: every bucket is all-reduced.
  std::vector<int> owners;
};

/// The owner of each of `sizes` (element counts in the order the gradient buckets take the
/// parameters: reverse registration order) for ZeRO stage 2: W contiguous runs balanced by size
/// (each parameter goes to the rank whose equal share its middle falls in), so buckets never
/// straddle owners. A function of `sizes` and `world` alone.
std::vector<int> partition_contiguous(const std::vector<int64_t>& sizes, int world);
/// partition_contiguous of `params` in the buckets' order, as owners by index into `params`.
std::vector<int> bucket_owners(const std::vector<torch::Tensor>& params, int world);
/// The same of each parameter's `sizes` (by index into `params`; those that do not train count
/// none): a part of a tensor cut over a tensor group counted as its whole, so that every
/// process of the group draws the same owners.
std::vector<int> bucket_owners(const std::vector<torch::Tensor>& params, int world,
                               const std::vector<int64_t>& sizes);

/// GradientSync for data-parallel training. Parameters are grouped, in reverse order (the
/// order backward produces their gradients), into buckets of about `bucket_mb`; when the last
/// gradient of a bucket is accumulated (an autograd post-hook on the parameter's gradient
/// accumulator), the bucket is flattened and its all-reduce launched — in bucket order on every
/// rank, so collectives always match — while backward goes on. finish() launches what is left,
/// waits, and writes the averages back into the gradients. Micro-steps that do not end an
/// accumulation window reduce nothing.
class DataParallelSync : public GradientSync {
 public:
  DataParallelSync(std::shared_ptr<ProcessGroup> group, std::vector<torch::Tensor> params,
                   DataParallelOptions options);
  ~DataParallelSync() override;
  DataParallelSync(const DataParallelSync&) = delete;
  DataParallelSync& operator=(const DataParallelSync&) = delete;

  void before_backward(bool will_step) override;
  void finish(const std::vector<torch::Tensor>& params) override;
  bool keeps_gradients() const override { return true; }  ///< views of the buckets
  /// The step's decision rides at the end of the last bucket (launched last on every rank);
  /// under ZeRO stage 2 in a small all-reduce of its own, launched in finish().
  bool shares_decisions() const override { return true; }
  bool gradients_partitioned() const override { return !options_.owners.empty(); }
  double sum_across_ranks(double local) override;
  void share(const StepDecision& mine, const torch::Tensor& nonfinite_on_device = {}) override {
    mine_ = mine.encode();
    nonfinite_flag_ = nonfinite_on_device;
  }
  void agree() override;
  StepDecision agreed() const override { return StepDecision::decode(agreed_.data()); }
  static constexpr int64_t kFlagSlots = StepDecision::kSlots;

  size_t buckets() const { return buckets_.size(); }
  /// Bucket reduces launched from hooks (while backward ran) and from finish().
  int64_t launched_in_backward() const { return launched_in_backward_; }
  int64_t launched_in_finish() const { return launched_in_finish_; }

 private:
  struct Bucket {
    std::vector<size_t> members;  ///< indices into params_
    std::vector<int64_t> offsets;
    torch::Tensor flat;
    torch::Tensor wide;  ///< float32 stand-in reduced instead of `flat` (bfloat16 on Gloo)
    size_t ready = 0;
    c10::intrusive_ptr<c10d::Work> work;
    int owner = -1;  ///< ZeRO stage 2: the rank it is reduced to; -1: all-reduced
    int64_t numel = 0;
    int64_t seq = -1;  ///< its reduce's record in the group's flight recorder
  };
  /// The constructor's parts: parameters into buckets (reverse order, one dtype and owner a
  /// bucket), the decision's slots, the autograd hooks that launch the buckets.
  void lay_out_buckets();
  void add_decision_slots();
  void hook_gradients();
  void grad_ready(size_t param);
  /// finish()'s waits: every bucket's reduce (the sums, the decision in the last), and the
  /// decision's own all-reduce into agreed_ (`slots`: what it reduced).
  void wait_for_buckets();
  void wait_for_decision(c10d::Work& work, int64_t seq, const torch::Tensor& slots);
  /// The decision's own all-reduce of `slots`, recorded; its record's sequence number.
  c10::intrusive_ptr<c10d::Work> launch_decision(torch::Tensor& slots, int64_t& seq);
  /// Whether a parameter got no gradient in this window on this rank.
  bool missing_here() const;
  /// Which parameters some rank used in this window (one small all-reduce); warns once of those
  /// none did, unless find_unused_parameters says it is expected.
  std::vector<bool> used_by_any_rank();
  /// The reduced gradients into the parameters; those no rank `used` get none, as in one
  /// process (see DataParallelOptions::gradient_views).
  void give_gradients(const std::vector<bool>& used);
  /// This rank's decision (and its device-side non-finite flag) into the slots that carry it.
  void write_decision(torch::Tensor slots) const;
  /// `phase`: the one the record names ("backward" from the hooks; null: the run's position).
  void launch(Bucket& bucket, const char* phase);
  void launch_in_order();

  std::shared_ptr<ProcessGroup> group_;
  std::vector<torch::Tensor> params_;
  DataParallelOptions options_;
  torch::Device device_;  ///< the parameters': the buckets' and the decision slots'
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  ///< per parameter
  std::vector<bool> has_grad_;     ///< per parameter, the window's last backward
  std::vector<bool> touched_;      ///< per parameter, any backward of the window
  bool warned_unused_ = false;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  ///< the hooked nodes
  std::vector<uintptr_t> hook_keys_;
  bool active_ = false;     ///< this backward ends the window: reduce
  size_t next_launch_ = 0;  ///< buckets launch in index order
  int64_t launched_in_backward_ = 0;
  int64_t launched_in_finish_ = 0;
  std::array<float, kFlagSlots> mine_{};    ///< this rank's encoded decision for the window
  std::array<float, kFlagSlots> agreed_{};  ///< their sums over ranks, after finish()
  torch::Tensor nonfinite_flag_;  ///< a device-side non-finite flag joining mine_[0], or none
  torch::Tensor decision_;        ///< ZeRO stage 2: the decision's own all-reduce
};

}  // namespace unitrain
