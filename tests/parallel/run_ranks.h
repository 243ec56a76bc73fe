#pragma once
// run_ranks: threads as the ranks of one in-memory process group, for the parallel/ tests.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <vector>

#include "unitrain/parallel/process_group.h"

namespace unitrain::test {

/// Runs `body(rank, group)` on `world` threads, each a rank of one in-memory process group;
/// a test failure names each rank whose body threw.
inline void run_ranks(int world, const std::function<void(int, ProcessGroup&)>& body) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  ProcessGroupOptions options;
  options.interface = "lo";
  options.timeout = std::chrono::seconds(30);
  std::vector<std::thread> threads;
  std::vector<std::string> failures(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto group = ProcessGroup::over_store(store, r, world, options);
        body(r, *group);
      } catch (const std::exception& e) {
        failures[size_t(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) EXPECT_EQ(failures[size_t(r)], "") << "rank " << r;
}

}  // namespace unitrain::test
