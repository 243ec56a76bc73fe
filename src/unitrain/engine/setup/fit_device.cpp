#include "unitrain/engine/setup/fit_device.h"

#include <torch/torch.h>

#include <vector>

#include "unitrain/core/train_module.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/engine/setup/reproducible_checks.h"
#include "unitrain/engine/setup/run_device.h"
#include "unitrain/log/console.h"
#include "unitrain/parallel/data_parallel.h"
#include "unitrain/parallel/dist_env.h"
#include "unitrain/parallel/sharded_parameters.h"
#include "unitrain/precision/cpu_bf16.h"
#include "unitrain/precision/precision_support.h"

namespace unitrain {

FitDevice set_up_device(const RunSettings& settings, const DistEnv& env) {
  const TrainOptions& train = settings.train;
  set_deterministic(train.deterministic);  // before anything uses a GPU
  FitDevice fit;
  fit.matmul = set_matmul_precision(train.matmul_precision);
  fit.device = resolve_device(train.device, env.local_rank);
  settings.loader.check_pin_memory(fit.device.is_cuda());
  // Every precision restriction of the run's parts on its device, before the run folder changes.
  std::vector<PrecisionSupport> restrictions;
  check_reproducible(settings, env.world_size);
  // (Under distributed.reproducible ZeRO 2 steps whole gradients: no bucket owners.)
  const bool buckets_to_owners =
      settings.distributed.zero == 2 && !settings.distributed.reproducible_on();
  if (env.distributed() && buckets_to_owners) {
    restrictions.push_back(zero2_precisions());
  }
  check_precision(train.precision, fit.device.type(), restrictions);
  if (env.rank == 0) say_cpu_bf16_cost(train.precision, fit.device.type());
  return fit;
}

void announce_device(const FitDevice& fit, const TrainOptions& options) {
  log::info("device: " + describe_device(fit.device));
  if (options.deterministic) log::info("deterministic: on");
  if (fit.matmul != "highest") {
    log::info("matmul precision: " + fit.matmul +
              " (float32 matrix products may use TF32, and with medium bfloat16, where the "
              "hardware has it)");
  }
  reset_peak_memory(fit.device);  // the done line's peak is this run's
}

void place_module(TrainModule& module, ProcessGroup* group, const RunSettings& settings,
                  const torch::Device& device) {
  if (group && (settings.distributed.zero != 3 || device.is_cuda() ||
                settings.train.precision == PrecisionMode::Bf16True)) {
    restore_kept_parts(*group, module.weights().parameters());
  }
  module.to(device);  // before the weights are broadcast and the optimizer built
  if (group) broadcast_module(*group, module.weights());  // every rank starts from rank 0's
}

}  // namespace unitrain
