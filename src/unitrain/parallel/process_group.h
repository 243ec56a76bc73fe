#pragma once
// ProcessGroup: the processes of one data-parallel job, joined through PyTorch's c10d engine
// (a TCPStore for rendezvous, ProcessGroupGloo on the CPU; ProcessGroupNCCL where LibTorch has
// CUDA). c10d's headers stay out of this one.
#include <torch/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "unitrain/parallel/c10d_fwd.h"
#include "unitrain/parallel/dist_env.h"
#include "unitrain/parallel/flight_recorder.h"

namespace unitrain {

class ArrivalBoard;
class RunPosition;

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
  /// Where a failed collective's flight record goes (run_dir/logs/flight-rank-N.json); empty:
  /// nowhere.
  std::string flight_file;
  /// After a failed collective, the process ends with exit code 1 this long after the
  /// TrainError is thrown unless it has ended by then: Gloo in LibTorch 1.13 cannot abort the
  /// collectives still queued, and unwinding waits for each one's own timeout. Negative: never
  /// (threads as ranks in one process).
  std::chrono::milliseconds exit_after_failure{-1};
  /// Who hosts the store the group meets through, for messages ("rank 0", "torchrun's agent");
  /// "" when no process does (a file, an in-memory store). join() sets it.
  std::string store_host;
  /// This process hosts that store: after a failed collective it waits (ArrivalBoard::linger)
  /// before it goes on to end, so that the other ranks can still read who arrived.
  bool hosts_store = false;
};

/// One process's membership of the job. Collectives block until every rank has called them
/// (in the same order) or the timeout passes (TrainError naming what timed out).
/// Every collective gets a sequence number and a record in the group's FlightRecorder; every
/// rank publishes its latest one to the store (ArrivalBoard), so that a failed collective's
/// TrainError names the ranks that did not arrive and where each was last seen.
class ProcessGroup {
 public:
  /// Joins the job `env` describes: through its store_file when set (c10d's FileStore, no
  /// socket), else rank 0 hosts the TCPStore at master_addr:master_port, listening on that
  /// address only (unless an agent already hosts it: torchrun's, or `unitrain launch` on several
  /// machines; then this start's keys are under `/worker/attempt_<restart_count>`), and everyone
  /// connects; then the group is built (Gloo over loopback when every rank runs on this
  /// machine).
  /// TrainError naming the address when the master cannot be reached or its port is taken.
  static std::shared_ptr<ProcessGroup> join(const DistEnv& env, const ProcessGroupOptions& options);
  /// A group over an existing store (tests: threads as ranks over one in-memory store).
  static std::shared_ptr<ProcessGroup> over_store(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int world_size,
                                                  const ProcessGroupOptions& options);
  ~ProcessGroup();

  /// The group of `members` (ranks of this group, ascending, this rank among them), met through
  /// this group's store under `name` (one name a group in the job): the tensor- and
  /// pipeline-parallel groups inside the world. Only the members call it, each with the same
  /// list. Its rank() is this rank's place in `members`; its flight record, if this group keeps
  /// one, goes beside it with `name` in the file's name.
  std::shared_ptr<ProcessGroup> subgroup(const std::string& name,
                                         const std::vector<int>& members) const;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  /// Where the collectives run (ProcessGroupOptions::device). The collectives below take
  /// tensors on any device: one elsewhere travels as a copy made there, and is written back.
  const torch::Device& device() const { return device_; }
  /// "nccl" or "gloo".
  const char* backend() const;

  /// In-place sum over all ranks, of each tensor (any shapes).
  void all_reduce_sum(std::vector<torch::Tensor>& tensors);
  /// The sum over all ranks of one number (in float64; a copy travels on the group's device).
  double sum_of(double local);
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
  /// Every rank's `shard` (1-D, as long on every rank) into `full` (world x as long, 1-D,
  /// contiguous), rank r's at [r * n, (r + 1) * n): ZeRO stage 3's parameter gather. NCCL: one
  /// all-gather into the tensor; Gloo: into views of it.
  void all_gather_shards(torch::Tensor& full, const torch::Tensor& shard);
  /// all_gather_shards launched, not waited for: the returned function waits for it (call it
  /// exactly once, before reading `full`; `full` and `shard` must live until then). Other
  /// collectives may be launched and waited for meanwhile (ZeRO 3's prefetch of the next unit).
  std::function<void()> start_all_gather_shards(torch::Tensor& full, const torch::Tensor& shard);
  /// How Gloo, which has no reduce-scatter in LibTorch 1.13, sums `full` into each rank's part:
  /// one reduce per part, to its rank, all launched at once; or an all-reduce of the whole, of
  /// which each rank keeps its part.
  enum class ReduceScatterBy { PartReduces, AllReduce };
  /// The sum over ranks of `full` (1-D, world x n, the same layout everywhere), of which this
  /// rank receives its part [rank * n, (rank + 1) * n) in `shard` (n elements): ZeRO stage 3's
  /// gradient reduction. NCCL: one reduce-scatter; Gloo: `by`. `full` is overwritten.
  void reduce_scatter_sum(torch::Tensor& shard, torch::Tensor& full,
                          ReduceScatterBy by = ReduceScatterBy::PartReduces);
  /// Equal parts exchanged between every pair of ranks: `input` (1-D, world x n) is cut into
  /// world parts of n elements, part q going to rank q; `output` (1-D, contiguous, as long and
  /// of the same dtype) receives rank q's part for this rank at [q * n, (q + 1) * n).
  /// distributed.reproducible's gradient exchange. One all-to-all (Gloo, NCCL); nothing is added,
  /// so a bfloat16 tensor travels on Gloo as its bits (viewed as float16, which Gloo has), not
  /// widened.
  void all_to_all(torch::Tensor& output, const torch::Tensor& input);
  /// all_to_all launched, not waited for: the returned function waits for it (call it exactly
  /// once, before reading `output`; `output` and `input` must live, and `input` not change,
  /// until then): distributed.reproducible's exchange overlapping the next micro-shard.
  std::function<void()> start_all_to_all(torch::Tensor& output, const torch::Tensor& input);
  /// `tensor`'s bytes to rank `to`, returning once they may be reused: point-to-point, as the
  /// stages of a pipeline pass activations and gradients. Each send meets the recv of the same
  /// `tag` on the other rank. Any dtype travels as its bytes (bfloat16 on Gloo too).
  void send(const torch::Tensor& tensor, int to, int tag = 0);
  /// send launched, not waited for: the returned function waits for it (call it exactly once;
  /// the bytes are kept until then). The receiver may post its recv after this returns: two
  /// ranks that send to each other before they receive do not wait on one another.
  std::function<void()> start_send(const torch::Tensor& tensor, int to, int tag = 0);
  /// Fills `tensor` (contiguous; its shape and dtype the sender's, agreed beforehand) from rank
  /// `from`'s send of `tag`.
  void recv(torch::Tensor& tensor, int from, int tag = 0);
  /// Every rank's `text`, by rank.
  std::vector<std::string> all_gather(const std::string& text);
  void barrier();

  C10dGroup& group() { return *group_; }
  /// Records take their step and phase from `position` (the Trainer's; it outlives the group's
  /// use). Set before the collectives it should describe.
  void follow(const RunPosition* position);
  const FlightRecorder& flight() const { return flight_; }
  /// For collectives launched on group() directly (the gradient buckets): the record of one
  /// launched now (`phase` null: the followed position's), its end, and its failure: the
  /// TrainError that names the ranks that did not arrive, after the flight record is written.
  int64_t record_launch(const char* op, int32_t tensors, int64_t bytes, int32_t bucket = -1,
                        const char* phase = nullptr) {
    return flight_.begin(op, tensors, bytes, bucket, phase);
  }
  void record_done(int64_t seq) { flight_.end(seq); }
  [[noreturn]] void collective_failed(int64_t seq, const std::exception& error);
  /// A collective failed (collective_failed() reports it and the process is on its way out).
  bool failed() const { return failed_; }
  /// Writes the flight record (ProcessGroupOptions::flight_file) with `error`; for the stall
  /// watchdog, before it ends the process.
  void write_flight(const std::string& error) const;
  /// True when collectives on `dtype` tensors must run on float32 copies: Gloo in LibTorch
  /// 1.13 has no bfloat16 ("Invalid scalar type"). The collectives above do that themselves.
  bool needs_widening(c10::ScalarType dtype) const;

 private:
  ProcessGroup() = default;
  bool is_nccl() const;
  /// Starts publishing this rank's latest collective (over_store, once the group is built).
  void start_board();
  /// Runs `run` as collective `op` over `tensors` tensors of `bytes`, recorded; its failure
  /// goes to collective_failed().
  void wait(const char* op, int32_t tensors, int64_t bytes, const std::function<void()>& run);
  void each(
      const char* op, std::vector<torch::Tensor>& tensors,
      const std::function<c10::intrusive_ptr<c10d::Work>(std::vector<torch::Tensor>&)>& launch);
  int rank_ = 0;
  /// "rank N: " before this rank's errors, or "" when unitrain launch prefixes every line of
  /// the process already ("[rank N] ").
  std::string who_;
  int world_size_ = 1;
  std::chrono::milliseconds timeout_{};
  torch::Device device_ = torch::kCPU;
  c10::intrusive_ptr<c10d::Store> store_;
  ProcessGroupOptions options_;  ///< what it was built with, for subgroup()
  c10::intrusive_ptr<C10dGroup> group_;
  FlightRecorder flight_;
  std::shared_ptr<ArrivalBoard> board_;  ///< null until follow()
  std::string flight_file_;
  std::chrono::milliseconds exit_after_failure_{-1};
  std::string store_host_;
  bool hosts_store_ = false;
  std::atomic<bool> failed_{false};  ///< a collective failed and was reported
};

}  // namespace unitrain
