#include "unitrain/core/metric_value.h"

#include <gtest/gtest.h>

#include "unitrain/core/train_module.h"
#include "unitrain/metrics/metric_accumulator.h"

namespace unitrain {
namespace {

TEST(MetricValueTest, APlainDoubleIsAMetric) {
  StepOutput out;
  out.metrics["acc"] = 0.5;  // what a user writes for a value computed on the host
  out.metrics["tok_acc"] = MetricValue(0.25, 40.0);
  out.metrics["ppl"] = MetricValue(2.0, 10.0, /*exp=*/true);
  const MetricValue& acc = out.metrics.at("acc");
  ASSERT_TRUE(acc.value.defined());
  EXPECT_EQ(acc.value.dim(), 0);
  EXPECT_EQ(acc.value.scalar_type(), torch::kFloat64);
  EXPECT_DOUBLE_EQ(acc.value.item<double>(), 0.5);
  EXPECT_LT(acc.weight, 0);  // the batch size
  EXPECT_DOUBLE_EQ(out.metrics.at("tok_acc").weight, 40.0);
  EXPECT_TRUE(out.metrics.at("ppl").exp_of_mean);
}

TEST(MetricValueTest, DoublesAndTensorsAccumulateAlike) {
  MetricAccumulator acc;
  acc.add({{"a", 1.0}, {"b", MetricValue(torch::tensor(1.0))}}, 3);
  acc.add({{"a", 0.0}, {"b", MetricValue(torch::tensor(0.0))}}, 1);
  const auto means = acc.result();
  EXPECT_DOUBLE_EQ(means.at("a"), 0.75);
  EXPECT_DOUBLE_EQ(means.at("a"), means.at("b"));
}

}  // namespace
}  // namespace unitrain
