#pragma once
// ProcessGroup: the processes of one data-parallel job, joined through PyTorch's c10d engine
// (a TCPStore for rendezvous, ProcessGroupGloo on the CPU; ProcessGroupNCCL where LibTorch has
// CUDA). c10d's headers stay out of this one.
#include <torch/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "unitrain/parallel/dist_env.h"

#include "unitrain/parallel/c10d_fwd.h"

namespace unitrain {

struct ProcessGroupOptions {
  std::string backend = "gloo";  ///< gloo | nccl
  /// Network interface for Gloo (e.g. eth0, veth1); empty: GLOO_SOCKET_IFNAME, else the
  /// address the host name resolves to.
  std::string interface;
  /// With no interface named: Gloo over 127.0.0.1 (join() sets it when every rank runs on
  /// this machine), else over the address the host name resolves to.
  bool loopback = false;
  /// How long rendezvous and every collective may take before the job fails.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  /// Where this rank's collectives run: the run's device (NCCL: this rank's GPU, made the
  /// current CUDA device when the group is built; Gloo: the CPU).
  torch::Device device = torch::kCPU;
};

/// One process's membership of the job. Collectives block until every rank has called them
/// (in the same order) or the timeout passes (TrainError naming what timed out).
class ProcessGroup {
 public:
  /// Joins the job `env` describes: through its store_file when set (c10d's FileStore, no
  /// socket), else rank 0 hosts the TCPStore at master_addr:master_port, listening on that
  /// address only (unless torchrun's agent already hosts it), and everyone connects; then the
  /// group is built (Gloo over loopback when every rank runs on this machine).
  /// TrainError naming the address when the master cannot be reached or its port is taken.
  static std::shared_ptr<ProcessGroup> join(const DistEnv& env, const ProcessGroupOptions& options);
  /// A group over an existing store (tests: threads as ranks over one in-memory store).
  static std::shared_ptr<ProcessGroup> over_store(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int world_size,
                                                  const ProcessGroupOptions& options);
  ~ProcessGroup();

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  /// Where the collectives run (ProcessGroupOptions::device). The collectives below take
  /// tensors on any device: one elsewhere travels as a copy made there, and is written back.
  const torch::Device& device() const { return device_; }
  /// "nccl" or "gloo".
  const char* backend() const;

  /// In-place sum over all ranks, of each tensor (any shapes).
  void all_reduce_sum(std::vector<torch::Tensor>& tensors);
  /// In-place max over all ranks, of each tensor.
  void all_reduce_max(std::vector<torch::Tensor>& tensors);
  /// Rank `root`'s values of each tensor everywhere, in place.
  void broadcast(std::vector<torch::Tensor>& tensors, int root = 0);
  /// Each tensor from its own root (`roots[i]` for `tensors[i]`) everywhere, in place; all
  /// launched before any is waited for.
  void broadcast_from(std::vector<torch::Tensor>& tensors, const std::vector<int>& roots);
  /// Each tensor's values from its owner rank (`owners[i]` for `tensors[i]`) everywhere, in
  /// place, by the backend's best collective: Gloo broadcast_from (no buffer beside the
  /// tensors), NCCL all_gather_from_owners (one all-gather per dtype).
  void from_owners(std::vector<torch::Tensor>& tensors, const std::vector<int>& owners);
  /// from_owners as all-gathers: per dtype, each rank packs the tensors it owns (in order) into
  /// a chunk as long as the largest rank's, all ranks' chunks are gathered into one buffer
  /// (NCCL: all-gather into a tensor; Gloo: into views of it), and every tensor is copied out
  /// of its owner's chunk. Costs one buffer as large as the tensors of a dtype, for the call.
  void all_gather_from_owners(std::vector<torch::Tensor>& tensors, const std::vector<int>& owners);
  /// Every rank's `text`, by rank.
  std::vector<std::string> all_gather(const std::string& text);
  void barrier();

  C10dGroup& group() { return *group_; }
  /// True when collectives on `dtype` tensors must run on float32 copies: Gloo in LibTorch
  /// 1.13 has no bfloat16 ("Invalid scalar type"). The collectives above do that themselves.
  bool needs_widening(c10::ScalarType dtype) const;

 private:
  ProcessGroup() = default;
  bool is_nccl() const;
  void wait(const char* what, const std::function<void()>& run);
  void each(const char* what, std::vector<torch::Tensor>& tensors,
            const std::function<c10::intrusive_ptr<c10d::Work>(std::vector<torch::Tensor>&)>& launch);
  int rank_ = 0;
  int world_size_ = 1;
  std::chrono::milliseconds timeout_{};
  torch::Device device_ = torch::kCPU;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<C10dGroup> group_;
};

}  // namespace unitrain
