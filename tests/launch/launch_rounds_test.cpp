#include "unitrain/launch/launch_rounds.h"

#include <gtest/gtest.h>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/launch/launcher.h"

namespace unitrain {
namespace {

using test::contains;

const char* kShape = "2 worker(s) on each of 3 machines";

TEST(LaunchRounds, ARoundStartsOnceEveryMachineHasArrived) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  LaunchRounds m0(store, 0, 3, kShape), m1(store, 1, 3, kShape), m2(store, 2, 3, kShape);
  EXPECT_EQ(m0.missing(0), (std::vector<int>{0, 1, 2}));
  m0.arrive(0);
  m2.arrive(0);
  EXPECT_EQ(m1.missing(0), (std::vector<int>{1}));
  m1.arrive(0);
  EXPECT_TRUE(m0.missing(0).empty());
  // Arriving at round 0 says nothing about round 1.
  EXPECT_EQ(m0.missing(1), (std::vector<int>{0, 1, 2}));
}

TEST(LaunchRounds, AMachineStartedWithAnotherShapeIsNamed) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  LaunchRounds m0(store, 0, 2, kShape), m1(store, 1, 2, "3 worker(s) on each of 2 machines");
  m1.arrive(0);
  const std::string error = test::error_of<ConfigError>([&] { m0.missing(0); });
  EXPECT_TRUE(contains(error, "machine 1's launcher runs 3 worker(s)")) << error;
  EXPECT_TRUE(contains(error, "--nproc-per-node")) << error;
}

TEST(LaunchRounds, TheFirstCauseEndsTheRoundForEveryMachine) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  LaunchRounds m0(store, 0, 2, kShape), m1(store, 1, 2, kShape);
  EXPECT_FALSE(m0.ended(0).has_value());
  EXPECT_EQ(m1.end(0, "rank 2 on machine 1 was killed by signal 9"),
            "rank 2 on machine 1 was killed by signal 9");
  EXPECT_EQ(m0.ended(0).value_or(""), "rank 2 on machine 1 was killed by signal 9");
  // Machine 0's workers failed too (their peer was gone): the first cause stands.
  EXPECT_EQ(m0.end(0, "rank 0 on machine 0 exited with status 1"),
            "rank 2 on machine 1 was killed by signal 9");
  // The next round is a new one.
  EXPECT_FALSE(m1.ended(1).has_value());
}

TEST(LaunchRounds, ALauncherThatLeftIsNamed) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  LaunchRounds m0(store, 0, 3, kShape), m2(store, 2, 3, kShape);
  EXPECT_TRUE(m0.left().empty());
  m2.leave("stopped by signal 2");
  EXPECT_EQ(m0.left(), (std::vector<std::string>{"machine 2: stopped by signal 2"}));
}

TEST(LaunchRounds, AnUnreachableMachineZeroIsNamed) {
  LaunchOptions o;
  o.nnodes = 2;
  o.node_rank = 1;
  o.master_port = 9;  // discard: nothing listens there
  o.rendezvous_seconds = 0.5;
  const std::string error = test::error_of<TrainError>([&] { LaunchRounds::connect(o); });
  EXPECT_TRUE(contains(error, "cannot reach machine 0's launcher at 127.0.0.1:9")) << error;
}

TEST(LaunchRounds, MachineZeroListensOnItsAddressOnly) {
  LaunchOptions o;
  o.nnodes = 2;
  o.master_addr = "192.0.2.1";  // TEST-NET-1: no machine's address
  const std::string error = test::error_of<ConfigError>([&] { LaunchRounds::connect(o); });
  EXPECT_TRUE(contains(error, "--master-addr='192.0.2.1'")) << error;
}

}  // namespace
}  // namespace unitrain
