// The `distributed` section's process group for a run's device: the backend auto picks, and the
// backends refused with a device they cannot reduce on.
#include "unitrain/parallel/distributed_options.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

DistributedOptions with_backend(const std::string& backend) {
  DistributedOptions o;
  o.backend = backend;
  return o;
}

TEST(DistributedOptions, AutoPicksNcclOnAGpuAndGlooOnTheCpu) {
  const torch::Device gpu(torch::kCUDA, 1);
  const ProcessGroupOptions on_gpu = with_backend("auto").group_options(gpu);
  EXPECT_EQ(on_gpu.backend, "nccl");
  EXPECT_EQ(on_gpu.device, gpu);  // the group's collectives run on the run's GPU
  const ProcessGroupOptions on_cpu = with_backend("auto").group_options(torch::kCPU);
  EXPECT_EQ(on_cpu.backend, "gloo");
  EXPECT_EQ(on_cpu.device, torch::Device(torch::kCPU));
  EXPECT_EQ(with_backend("gloo").group_options(torch::kCPU).backend, "gloo");
  EXPECT_EQ(with_backend("nccl").group_options(gpu).backend, "nccl");
}

TEST(DistributedOptions, GlooWithAGpuIsRefusedNamingBothKeys) {
  const DistributedOptions gloo = with_backend("gloo");
  EXPECT_THROW(gloo.group_options(torch::Device(torch::kCUDA, 0)), ConfigError);
  const std::string m =
      test::message_of([&] { gloo.group_options(torch::Device(torch::kCUDA, 0)); });
  EXPECT_TRUE(test::contains(m, "distributed.backend: gloo with train.device cuda:0")) << m;
  EXPECT_TRUE(test::contains(m, "use distributed.backend: nccl (or auto")) << m;
}

TEST(DistributedOptions, NcclWithoutAGpuIsRefusedNamingBothKeys) {
  const DistributedOptions nccl = with_backend("nccl");
  EXPECT_THROW(nccl.group_options(torch::kCPU), ConfigError);
  const std::string m = test::message_of([&] { nccl.group_options(torch::kCPU); });
  EXPECT_TRUE(test::contains(m, "distributed.backend: nccl with train.device cpu")) << m;
  EXPECT_TRUE(test::contains(m, "use distributed.backend: gloo (or auto")) << m;
}

}  // namespace
}  // namespace unitrain
