#pragma once
// run_ranks: threads as the ranks of one in-memory process group, for the parallel/ tests.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <vector>

#include "unitrain/parallel/process_group.h"

namespace unitrain::test {

/// Runs `body(rank, group)` on `world` threads, each a rank of one in-memory process group
/// (held as the engine holds it); a test failure names each rank whose body threw.
inline void run_shared_ranks(
    int world, const std::function<void(int, const std::shared_ptr<ProcessGroup>&)>& body) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  ProcessGroupOptions options;
  options.interface = "lo";
  options.timeout = std::chrono::seconds(30);
  std::vector<std::thread> threads;
  std::vector<std::string> failures(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r, ProcessGroup::over_store(store, r, world, options));
      } catch (const std::exception& e) {
        failures[size_t(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) EXPECT_EQ(failures[size_t(r)], "") << "rank " << r;
}

/// The same for a body that takes the group by reference.
inline void run_ranks(int world, const std::function<void(int, ProcessGroup&)>& body) {
  run_shared_ranks(
      world, [&](int rank, const std::shared_ptr<ProcessGroup>& group) { body(rank, *group); });
}

}  // namespace unitrain::test
