// train.device on a machine without a GPU: cpu and auto train on the CPU; every way of asking
// for a GPU is a ConfigError naming the key and what this build has.
#include "unitrain/engine/setup/run_device.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/config/train_options.h"
#include "unitrain/engine/setup/cuda_facts.h"

namespace unitrain {

TEST(RunDevice, CpuAndAutoAreTheCpuWithoutAGpu) {
  ASSERT_FALSE(torch::cuda::is_available()) << "these expectations are for a machine without one";
  EXPECT_TRUE(resolve_device("cpu", 0).is_cpu());
  EXPECT_TRUE(resolve_device("auto", 0).is_cpu());
  EXPECT_TRUE(resolve_device("auto", 3).is_cpu());
  EXPECT_EQ(describe_device(torch::Device(torch::kCPU)), "cpu");
}

TEST(RunDevice, AGpuWhereThereIsNoneOrAMisspeltDeviceNamesTheKey) {
  for (const char* spec : {"cuda", "cuda:0", "cuda:1"}) {
    const std::string m = test::config_error_of([&] { resolve_device(spec, 0); });
    EXPECT_TRUE(test::contains(m, std::string("train.device: ") + spec + " asks for a GPU")) << m;
    EXPECT_TRUE(test::contains(m, "built without CUDA")) << m;
    EXPECT_TRUE(test::contains(m, "use train.device: cpu")) << m;
  }
  for (const char* spec : {"gpu", "cuda:", "cuda:x", "cuda:-1", "CPU", ""}) {
    const std::string m = test::config_error_of([&] { resolve_device(spec, 0); });
    EXPECT_TRUE(test::contains(m, "is not a device: write cpu, cuda, cuda:N")) << spec << ": " << m;
  }
}

TEST(RunDevice, BatchesStayWhereTheyAreForAModuleOnTheCpu) {
  torch::nn::Linear net(2, 1);
  Batch b;
  b.set("x", torch::ones({3, 2}));
  EXPECT_TRUE(device_of(*net).is_cpu());
  Batch storage;
  const Batch& there = on_device(b, device_of(*net), storage);
  EXPECT_EQ(&there, &b);                          // the batch itself: nothing copied
  EXPECT_TRUE(storage.begin() == storage.end());  // and nothing stored
}

TEST(RunDevice, AGpuIsNamedWithItsModelAndMemoryWhenCudaSaysThem) {
  const torch::Device gpu(torch::kCUDA, 0);
  const GpuFacts h100{"NVIDIA H100 80GB HBM3", 84929347584, 9, 0};
  EXPECT_EQ(describe_gpu(gpu, h100, 2), "cuda:0 (NVIDIA H100 80GB HBM3, 79.1 GiB; 1 of 2 GPUs)");
  EXPECT_EQ(describe_gpu(torch::Device(torch::kCUDA, 1), std::nullopt, 2), "cuda:1 (2 of 2 GPUs)");
}

TEST(RunDevice, ACpuBuildHasNoGpuFactsNorDevicePeak) {
  ASSERT_FALSE(torch::cuda::is_available()) << "these expectations are for a machine without one";
  EXPECT_FALSE(gpu_facts(0).has_value());
  EXPECT_FALSE(peak_device_memory(0).has_value());
  reset_peak_device_memory(0);  // nothing to reset, and no error
  EXPECT_FALSE(peak_memory_bytes(torch::Device(torch::kCPU)).has_value());
  EXPECT_FALSE(peak_memory_bytes(torch::Device(torch::kCUDA, 0)).has_value());
}

TEST(RunDevice, DeterministicSetsLibTorchsFlagsAndCublasWorkspaceUnlessSet) {
  at::Context& context = at::globalContext();
  const char* before = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  const std::string kept = before ? before : "";
  unsetenv("CUBLAS_WORKSPACE_CONFIG");
  context.setBenchmarkCuDNN(true);
  set_deterministic(true);
  EXPECT_TRUE(context.deterministicAlgorithms());
  EXPECT_FALSE(context.deterministicAlgorithmsWarnOnly());
  EXPECT_TRUE(context.deterministicCuDNN());
  EXPECT_FALSE(context.benchmarkCuDNN());
  ASSERT_NE(std::getenv("CUBLAS_WORKSPACE_CONFIG"), nullptr);
  EXPECT_STREQ(std::getenv("CUBLAS_WORKSPACE_CONFIG"), ":4096:8");
  setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8", 1);  // the user's own value is kept
  set_deterministic(true);
  EXPECT_STREQ(std::getenv("CUBLAS_WORKSPACE_CONFIG"), ":16:8");
  set_deterministic(false);
  EXPECT_FALSE(context.deterministicAlgorithms());
  EXPECT_FALSE(context.deterministicCuDNN());
  if (before) {
    setenv("CUBLAS_WORKSPACE_CONFIG", kept.c_str(), 1);
  } else {
    unsetenv("CUBLAS_WORKSPACE_CONFIG");
  }
}

// train.matmul_precision sets LibTorch's process-wide precision (what torch.get_float32_matmul_
// precision reads) and says what is in effect; keep leaves what the program set.
TEST(RunDevice, MatmulPrecisionSetsLibTorchsAndKeepLeavesTheProgramsOwn) {
  at::Context& context = at::globalContext();
  EXPECT_EQ(set_matmul_precision(MatmulPrecision::High), "high");
  EXPECT_EQ(context.float32MatmulPrecision(), at::Float32MatmulPrecision::HIGH);
  EXPECT_EQ(set_matmul_precision(MatmulPrecision::Keep), "high");  // the program's, kept
  EXPECT_EQ(set_matmul_precision(MatmulPrecision::Medium), "medium");
  EXPECT_EQ(context.float32MatmulPrecision(), at::Float32MatmulPrecision::MEDIUM);
  EXPECT_EQ(set_matmul_precision(MatmulPrecision::Highest), "highest");
  EXPECT_EQ(context.float32MatmulPrecision(), at::Float32MatmulPrecision::HIGHEST);
  EXPECT_EQ(TrainOptions().matmul_precision, MatmulPrecision::Keep);
  EXPECT_EQ(
      TrainOptions::from_config(Config::from_string("{matmul_precision: high}")).matmul_precision,
      MatmulPrecision::High);
  const std::string m = test::config_error_of(
      [] { TrainOptions::from_config(Config::from_string("{matmul_precision: tf32}")); });
  EXPECT_TRUE(test::contains(m, "matmul_precision")) << m;
  EXPECT_TRUE(test::contains(m, "highest")) << m;
}

}  // namespace unitrain
