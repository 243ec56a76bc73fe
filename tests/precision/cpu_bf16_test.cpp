#include "unitrain/precision/cpu_bf16.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_util.h"

namespace unitrain {
namespace {

using test::contains;

TEST(CpuBf16, SlowerBfloat16IsAWarningThatSuggestsFp32) {
  bool slower = false;
  std::string note = cpu_bf16_note("", 1e-3, 7e-3, &slower);
  EXPECT_TRUE(slower);
  EXPECT_TRUE(contains(note, "takes 7.0x the time of a float32 one")) << note;
  EXPECT_TRUE(contains(note, "no bfloat16 instructions")) << note;
  EXPECT_TRUE(contains(note, "train.precision: fp32")) << note;
  note = cpu_bf16_note("avx512_bf16, amx_bf16", 1e-3, 0.4e-3, &slower);
  EXPECT_FALSE(slower);
  EXPECT_TRUE(contains(note, "0.40x the time")) << note;
  EXPECT_TRUE(contains(note, "this CPU has avx512_bf16, amx_bf16")) << note;
  EXPECT_FALSE(contains(note, "train.precision: fp32")) << note;
}

TEST(CpuBf16, TheMeasurementLeavesTheRandomStreamAlone) {
  torch::manual_seed(3);
  const torch::Tensor before = torch::rand({4});
  torch::manual_seed(3);
  bool slower = false;
  EXPECT_TRUE(contains(measure_cpu_bf16(&slower), "a bfloat16 matrix product takes"));
  EXPECT_TRUE(torch::equal(torch::rand({4}), before));
}

}  // namespace
}  // namespace unitrain
