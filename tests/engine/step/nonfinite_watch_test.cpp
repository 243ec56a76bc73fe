// NonfiniteWatch: the window's flags, the late check's first bad step, its checkpoint entry.
#include "unitrain/engine/step/nonfinite_watch.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

namespace unitrain {
namespace {

TEST(NonfiniteWatch, SettleStopsOnceForTheFirstBadStepKept) {
  std::vector<std::pair<std::string, int64_t>> stops;
  NonfiniteWatch watch([&](const std::string& what, int64_t step, const at::Tensor&, double) {
    stops.emplace_back(what, step);
  });
  watch.settle();  // nothing kept
  const auto loss = [](double v) { return torch::tensor(v); };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  watch.remember_first_bad(torch::tensor(false), loss(1.0), at::Tensor(), 1);
  watch.remember_first_bad(torch::tensor(true), loss(nan), at::Tensor(), 2);
  watch.remember_first_bad(torch::tensor(true), loss(nan), torch::tensor(nan), 3);
  EXPECT_TRUE(stops.empty());  // kept on the device until settled
  watch.settle();
  watch.settle();
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0], std::make_pair(std::string("loss"), int64_t{2}));
}

TEST(NonfiniteWatch, TheWindowsFlagGoesThroughItsSection) {
  NonfiniteWatch watch([](const std::string&, int64_t, const at::Tensor&, double) {});
  watch.window_may_be_bad(torch::tensor(false));
  EXPECT_FALSE(watch.window_bad());
  watch.window_may_be_bad(torch::tensor(true));  // or-ed on the device
  EXPECT_TRUE(watch.window_bad());
  EXPECT_FALSE(watch.window_seen_bad());  // the host's flag alone
  CheckpointWrite out;
  watch.save(out);
  EXPECT_EQ(out.state.section("nonfinite"), R"({"window_bad":true})");
  NonfiniteWatch back([](const std::string&, int64_t, const at::Tensor&, double) {});
  back.restore({"d", out.state, 0});
  EXPECT_TRUE(back.window_seen_bad());
  back.window_closed();
  EXPECT_FALSE(back.window_bad());
}

}  // namespace
}  // namespace unitrain
