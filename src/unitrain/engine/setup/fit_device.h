#pragma once
// A fit's device and its module there: the numerics train says (deterministic algorithms,
// matmul precision), the checks of the run's precision on that device, and the module moved
// there with every rank starting from rank 0's weights — the set-up Trainer::prepare_fit makes
// around the processes' joining.
#include <string>

#include "unitrain/core/batch.h"

namespace unitrain {

class ProcessGroup;
class TrainModule;
struct DistEnv;
struct RunSettings;
struct TrainOptions;

/// The device of this process (train.device for its local rank) and the precision matrix
/// products use there.
struct FitDevice {
  torch::Device device = torch::kCPU;
  std::string matmul;  ///< "highest", "high" or "medium" (set_matmul_precision's)
};

/// Before the processes join (data parallelism on GPUs talks through NCCL, on the device):
/// train.deterministic and train.matmul_precision set, the device resolved; data.loader's
/// pinned memory and the run's precision checked on it (ZeRO 2's restrictions where
/// distributed), said on rank 0 when bf16 costs on this CPU. ConfigError naming the key when
/// something does not fit; nothing written.
FitDevice set_up_device(const RunSettings& settings, const DistEnv& env);

/// The device's lines, once the processes joined (each rank's log says its own); its peak
/// memory counted from here (the done line's is this run's).
void announce_device(const FitDevice& fit, const TrainOptions& options);

/// `module` on `device`, before the optimizer is built and the gradient buckets laid out: with
/// several processes every rank starts from rank 0's weights. A model built in parts
/// (core/unit_parts.h) is cut into ZeRO 3's shards a unit at a time; a run that reads its
/// values before (a GPU's copy, bf16-true's cast) or never shards them gathers it whole first.
void place_module(TrainModule& module, ProcessGroup* group, const RunSettings& settings,
                  const torch::Device& device);

}  // namespace unitrain
