#pragma once
// The device a run trains on (`train.device`), what the run says of it, and batches moved to it.
#include <cstdint>
#include <optional>
#include <string>

#include "unitrain/core/batch.h"
#include "unitrain/engine/setup/cuda_facts.h"

namespace torch::nn {
class Module;
}

namespace unitrain {

/// `train.device` for the process with local rank `local_rank`: `cpu`; `cuda` (= cuda:<local
/// rank>: one GPU per process of a machine); `cuda:N`; `auto` (the same as `cuda` when this
/// LibTorch has CUDA and the machine a GPU for the rank, else cpu). ConfigError naming
/// train.device for any other spelling, and for a GPU this build or machine does not have
/// (saying what it has).
torch::Device resolve_device(const std::string& spec, int local_rank);

/// How the run's first lines name `device`: "cpu", "cuda:0 (NVIDIA H100 80GB HBM3, 79.1 GiB;
/// 1 of 2 GPUs)".
std::string describe_device(const torch::Device& device);
/// The same for a GPU `device` given its facts (none: "cuda:0 (1 of 2 GPUs)") and the GPUs
/// the machine has.
std::string describe_gpu(const torch::Device& device, const std::optional<GpuFacts>& facts,
                         int64_t gpus);

/// `train.deterministic`: with `on`, LibTorch's deterministic algorithms (an error for an
/// operation that has none), cuDNN's deterministic kernels without its benchmark autotuner, and
/// CUBLAS_WORKSPACE_CONFIG=:4096:8 in the environment unless it is set; call it before anything
/// uses a GPU (cuBLAS reads the variable when it starts). Without `on`, LibTorch's defaults for
/// the first two (nondeterministic allowed, cuDNN's choice); the environment is left as it is.
void set_deterministic(bool on);

enum class MatmulPrecision;

/// `train.matmul_precision`: sets how LibTorch may compute float32 matrix products, for the
/// whole process (at::globalContext(), as torch.set_float32_matmul_precision); Keep changes
/// nothing. Returns the precision then in effect: "highest", "high" or "medium".
std::string set_matmul_precision(MatmulPrecision precision);

/// The most bytes allocated on `device` since reset_peak_memory(device): a GPU's caching
/// allocator; nullopt for the CPU (whose peak is the process's RSS).
std::optional<int64_t> peak_memory_bytes(const torch::Device& device);
void reset_peak_memory(const torch::Device& device);

/// Where `module`'s parameters are (the first one's device; the CPU without parameters).
torch::Device device_of(const torch::nn::Module& module);

/// `batch` on `device`: `batch` itself on the CPU (nothing copied), else its copy there, held in
/// `storage` (which the result refers to). Copies pinned host memory without blocking; to a GPU
/// on a side stream, while the step before runs (gpu_batches.h).
const Batch& on_device(const Batch& batch, const torch::Device& device, Batch& storage);

}  // namespace unitrain
