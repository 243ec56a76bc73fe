#include "unitrain/engine/callbacks/throughput.h"

#include <gtest/gtest.h>

#include <cmath>

namespace unitrain {
namespace {

TEST(Throughput, QuantilesInterpolateLikeNumpy) {
  // numpy.quantile([4, 1, 3, 2], [0, .5, .9, 1]) = [1, 2.5, 3.7, 4]
  const std::vector<double> v{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(quantile(v, 0), 1);
  EXPECT_DOUBLE_EQ(quantile(v, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile(v, 0.9), 3.7);
  EXPECT_DOUBLE_EQ(quantile(v, 1), 4);
  EXPECT_DOUBLE_EQ(quantile({7}, 0.99), 7);
  EXPECT_TRUE(std::isnan(quantile({}, 0.5)));
}

}  // namespace
}  // namespace unitrain
