#pragma once
// The `distributed` section: how the processes of a data-parallel run talk and reduce.
#include <memory>
#include <string>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/parallel/data_parallel.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {

/// Options of the `distributed` section; each key is declared once in declare(), its default
/// being the field's own.
/// Where each process stands (rank, world size, master) comes from the launcher's environment
/// (dist_env.h), not from here.
struct DistributedOptions {
  std::string backend = "auto";  ///< auto (nccl with CUDA, else gloo) | gloo | nccl
  std::string interface;         ///< "" = GLOO_SOCKET_IFNAME, else the host name's address
  double timeout_seconds = 300;
  double bucket_mb = 25;
  bool find_unused_parameters = false;
  bool broadcast_buffers = true;
  int64_t zero =
      0;  ///< ZeRO stage: 0 = all optimizer state everywhere, 1 = sharded, 2 = and gradients
  int64_t unit_min_params = 0;  ///< ZeRO 3: consecutive units joined until each holds this many
  bool prefetch = false;        ///< ZeRO 3: the next unit's gather launched while one computes
  bool prefetch_auto = true;    ///< `auto`: on with NCCL (GPUs), off with Gloo
  /// G > 0: every step is a function of its G micro-shards alone, bitwise the same on any
  /// world size dividing G (docs/distributed.md, "The same weights on any number of
  /// processes"); 0: off.
  int64_t reproducible = 0;
  /// C > 0 (with `reproducible`): the parallel layers computed in C fixed chunks, the same
  /// bits on any tensor_parallel dividing C (and on one process); 0: not chunked.
  int64_t reproducible_chunks = 0;
  /// T > 1: each layer of the built-in transformers (or a C++ model's parallel layers) cut
  /// over groups of T processes (tensor parallelism), the world's processes being T x the
  /// data-parallel replicas.
  int64_t tensor_parallel = 1;
  /// P > 1: the model's units (embeddings, blocks, head) cut into P pipeline stages, a stage a
  /// process (or a tensor group), the micro-batches of each step through them in 1F1B.
  int64_t pipeline_parallel = 1;
  /// The first unit of each stage after the first (P - 1 of them); empty: balanced by cost.
  std::vector<int64_t> pipeline_cuts;

  /// distributed.reproducible is on.
  bool reproducible_on() const { return reproducible > 0; }

  /// ZeRO 3's prefetch: `prefetch`, or with `auto` on a GPU (NCCL) only.
  bool prefetches(bool on_gpu) const { return prefetch_auto ? on_gpu : prefetch; }

  static void declare(Options<DistributedOptions>& o);
  static std::shared_ptr<const Schema> schema() {
    return options_of<DistributedOptions>().schema();
  }
  static DistributedOptions from_config(const Config& c) {
    return options_of<DistributedOptions>().parse(c);
  }
  /// The group for a run on `device` (train.device): `backend: auto` is nccl on a GPU, else
  /// gloo. ConfigError naming both keys for gloo with a GPU (Gloo reduces GPU tensors only
  /// through host copies) and for nccl without one (NCCL reduces GPU tensors only).
  ProcessGroupOptions group_options(const torch::Device& device) const;
  DataParallelOptions data_parallel_options() const;
};

}  // namespace unitrain
