// check_precision(): each component's declared precisions, checked in one place.
#include "unitrain/precision/precision_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

TEST(PrecisionSupport, ASupportedModePasses) {
  for (PrecisionMode mode : {PrecisionMode::Fp32, PrecisionMode::Bf16Mixed}) {
    check_precision_support(mode, closure_optimizer_precisions());
    check_precision_support(mode, zero2_precisions());
  }
}

TEST(PrecisionSupport, AnUnsupportedModeNamesTheKeyTheComponentAndTheWayOut) {
  EXPECT_EQ(test::error_of<ConfigError>([] {
              check_precision_support(PrecisionMode::Fp16Mixed, closure_optimizer_precisions());
            }),
            "train.precision: fp16-mixed does not work with an optimizer that re-evaluates the "
            "loss in its step (optimizer.type: lbfgs); use fp32 or bf16-mixed");
  EXPECT_EQ(test::error_of<ConfigError>(
                [] { check_precision_support(PrecisionMode::Bf16True, zero2_precisions()); }),
            "train.precision: bf16-true does not work with distributed.zero: 2 (its gradients go "
            "to float32 master weights or through a loss scaler that sees every gradient); use "
            "fp32 or bf16-mixed, or distributed.zero: 1");
  const PrecisionSupport model{"model 'mine'", {PrecisionMode::Fp32}, "it computes in float64", ""};
  EXPECT_EQ(test::error_of<ConfigError>(
                [&] { check_precision_support(PrecisionMode::Bf16Mixed, model); }),
            "train.precision: bf16-mixed does not work with model 'mine' (it computes in "
            "float64); use fp32");
}

TEST(PrecisionSupport, CheckPrecisionChecksTheDeviceThenEachRestriction) {
  const c10::DeviceType cpu = c10::DeviceType::CPU;
  // fp16-mixed on the CPU: the device check comes first (Precision::check's message).
  const std::string device =
      test::error_of<ConfigError>([&] { check_precision(PrecisionMode::Fp16Mixed, cpu, {}); });
  EXPECT_NE(device.find("fp16-mixed needs a CUDA device"), std::string::npos) << device;
  check_precision(PrecisionMode::Bf16Mixed, cpu,
                  {closure_optimizer_precisions(), zero2_precisions()});
  const std::string zero = test::error_of<ConfigError>([&] {
    check_precision(PrecisionMode::Bf16True, cpu,
                    {closure_optimizer_precisions(), zero2_precisions()});
  });
  EXPECT_NE(zero.find("optimizer.type: lbfgs"), std::string::npos) << zero;  // the first one
}

}  // namespace
}  // namespace unitrain
