#include "unitrain/engine/setup/cuda_facts.h"

#ifdef UNITRAIN_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace unitrain {

#ifdef UNITRAIN_CUDA
namespace {

bool is_gpu(int index) { return index >= 0 && index < c10::cuda::device_count(); }

}  // namespace

std::optional<GpuFacts> gpu_facts(int index) {
  if (!is_gpu(index)) return std::nullopt;
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(index);
  return GpuFacts{p->name, static_cast<int64_t>(p->totalGlobalMem), p->major, p->minor};
}

std::optional<int64_t> peak_device_memory(int index) {
  if (!is_gpu(index)) return std::nullopt;
  namespace allocator = c10::cuda::CUDACachingAllocator;
  // The same in LibTorch 1.13 and 2.x (where the index is a c10::DeviceIndex and the stats
  // are c10::CachingDeviceAllocator's): element 0 of each StatArray is StatType::AGGREGATE.
  const auto stats = allocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
  return stats.allocated_bytes[0].peak;
}

void reset_peak_device_memory(int index) {
  if (!is_gpu(index)) return;
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index));
}

#else  // a LibTorch without CUDA: no GPU to describe or measure

std::optional<GpuFacts> gpu_facts(int) { return std::nullopt; }

std::optional<int64_t> peak_device_memory(int) { return std::nullopt; }

void reset_peak_device_memory(int) {}

#endif

}  // namespace unitrain
