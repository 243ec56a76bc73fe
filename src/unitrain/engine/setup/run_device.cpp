#include "unitrain/engine/setup/run_device.h"

#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cctype>
#include <cstdlib>

#include "unitrain/core/error.h"
#include "unitrain/engine/config/train_options.h"
#include "unitrain/engine/setup/gpu_batches.h"

namespace unitrain {
namespace {

/// What this build and machine offer, for messages: "this LibTorch (1.13.0) has no CUDA".
std::string cuda_here() {
  if (!at::hasCUDA()) {
    return fmt::format("this LibTorch ({}) was built without CUDA (CPU only)", TORCH_VERSION);
  }
  const int64_t n = static_cast<int64_t>(torch::cuda::device_count());
  return n == 0 ? std::string("this machine has no GPU LibTorch can use")
                : fmt::format("this machine has {} GPU(s): cuda:0 to cuda:{}", n, n - 1);
}

bool is_index(const std::string& s) {
  if (s.empty() || s.size() > 4) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

torch::Device resolve_device(const std::string& spec, int local_rank) {
  if (spec == "cpu") return torch::Device(torch::kCPU);
  const bool cuda_ok = torch::cuda::is_available();
  const int64_t gpus = cuda_ok ? static_cast<int64_t>(torch::cuda::device_count()) : 0;
  if (spec == "auto") {
    return cuda_ok && local_rank < gpus
               ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank))
               : torch::Device(torch::kCPU);
  }
  int64_t index = local_rank;
  if (spec.rfind("cuda:", 0) == 0) {
    UT_CHECK(is_index(spec.substr(5)), "train.device: '", spec,
             "' is not a device: write cpu, cuda, cuda:N (N a GPU's index) or auto");
    index = std::stoll(spec.substr(5));
  } else {
    UT_CHECK(spec == "cuda", "train.device: '", spec,
             "' is not a device: write cpu, cuda, cuda:N (N a GPU's index) or auto");
  }
  UT_CHECK(cuda_ok, "train.device: ", spec, " asks for a GPU, but ", cuda_here(),
           "; use train.device: cpu (or auto: a GPU when there is one)");
  UT_CHECK(index < gpus, "train.device: ", spec, (spec == "cuda" ? " (local rank " : ""),
           (spec == "cuda" ? std::to_string(local_rank) + ")" : std::string()), " needs GPU ",
           index, ", but ", cuda_here(),
           spec == "cuda" ? "; start at most one process per GPU on this machine" : "");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

std::string describe_device(const torch::Device& device) {
  if (!device.is_cuda()) return device.str();
  return describe_gpu(device, gpu_facts(device.index()),
                      static_cast<int64_t>(torch::cuda::device_count()));
}

std::string describe_gpu(const torch::Device& device, const std::optional<GpuFacts>& facts,
                         int64_t gpus) {
  const std::string where = fmt::format("{} of {} GPUs", device.index() + 1, gpus);
  if (!facts) return fmt::format("{} ({})", device.str(), where);
  return fmt::format("{} ({}, {:.1f} GiB; {})", device.str(), facts->name,
                     static_cast<double>(facts->total_memory) / (1024.0 * 1024.0 * 1024.0), where);
}

void set_deterministic(bool on) {
  at::Context& context = at::globalContext();
  context.setDeterministicAlgorithms(on, /*warn_only=*/false);
  context.setDeterministicCuDNN(on);
  if (!on) return;
  context.setBenchmarkCuDNN(false);
  // cuBLAS's reductions are run-to-run equal only with a fixed workspace (CUDA's documentation
  // of cuBLAS reproducibility); a value the user set is kept.
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
}

std::string set_matmul_precision(MatmulPrecision precision) {
  // LibTorch's names, in the order of MatmulPrecision (Keep has none).
  static const char* const kNames[] = {nullptr, "highest", "high", "medium"};
  at::Context& context = at::globalContext();
  if (precision != MatmulPrecision::Keep) {
    context.setFloat32MatmulPrecision(kNames[static_cast<int>(precision)]);
  }
  switch (context.float32MatmulPrecision()) {
    case at::Float32MatmulPrecision::HIGH:
      return "high";
    case at::Float32MatmulPrecision::MEDIUM:
      return "medium";
    default:
      return "highest";
  }
}

std::optional<int64_t> peak_memory_bytes(const torch::Device& device) {
  if (!device.is_cuda()) return std::nullopt;
  return peak_device_memory(device.index());
}

void reset_peak_memory(const torch::Device& device) {
  if (device.is_cuda()) reset_peak_device_memory(device.index());
}

torch::Device device_of(const torch::nn::Module& module) {
  const auto params = module.parameters();
  return params.empty() ? torch::Device(torch::kCPU) : params.front().device();
}

const Batch& on_device(const Batch& batch, const torch::Device& device, Batch& storage) {
  if (device.is_cpu()) return batch;
  storage = device.is_cuda() ? to_gpu_on_side_stream(batch, device)
                             : batch.to(device, /*non_blocking=*/true);
  return storage;
}

}  // namespace unitrain
