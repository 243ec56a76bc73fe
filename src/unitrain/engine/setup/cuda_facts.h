#pragma once
// What CUDA's runtime says about a GPU: its name and memory, and the caching allocator's peak.
// The one file of the engine that includes CUDA's headers (only in a build with CUDA); on a CPU
// build every function answers "not available".
#include <cstdint>
#include <optional>
#include <string>

namespace unitrain {

/// A GPU as the run's first lines name it.
struct GpuFacts {
  std::string name;          ///< e.g. "NVIDIA H100 80GB HBM3"
  int64_t total_memory = 0;  ///< bytes
  int major = 0, minor = 0;  ///< compute capability
};

/// GPU `index`'s properties; nullopt when this build has no CUDA or the machine no such GPU.
std::optional<GpuFacts> gpu_facts(int index);

/// The most bytes LibTorch's caching allocator has had allocated on GPU `index` since the last
/// reset_peak_device_memory(index); nullopt when this build has no CUDA or no such GPU.
std::optional<int64_t> peak_device_memory(int index);

/// Starts GPU `index`'s peak over from what is allocated now; nothing without CUDA.
void reset_peak_device_memory(int index);

}  // namespace unitrain
