#include "unitrain/parallel/process_group.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <thread>

#include "parallel/run_ranks.h"
#include "test_util.h"

namespace unitrain {
namespace {

TEST(ProcessGroup, RanksMeetThroughAStoreFileWithoutASocket) {
  // What `unitrain launch` on one machine gives its workers: UNITRAIN_STORE_FILE.
  const std::string file = test::temp_dir() + "/rendezvous/store";
  std::filesystem::create_directories(std::filesystem::path(file).parent_path());
  const int world = 2;
  std::vector<std::thread> threads;
  std::vector<double> sums(world, 0.0);
  std::vector<std::string> failures(world);
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        DistEnv env;
        env.launcher = "torchrun";
        env.rank = r;
        env.world_size = world;
        env.local_rank = r;
        env.local_world_size = world;
        env.master_port = 1;  // never used: no TCP store
        env.store_file = file;
        ProcessGroupOptions options;
        options.timeout = std::chrono::seconds(30);
        auto group = ProcessGroup::join(env, options);
        std::vector<torch::Tensor> t{torch::full({3}, double(r + 1), torch::kFloat64)};
        group->all_reduce_sum(t);
        sums[size_t(r)] = t[0].sum().item<double>();
      } catch (const std::exception& e) {
        failures[size_t(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(failures[size_t(r)], "") << "rank " << r;
    EXPECT_EQ(sums[size_t(r)], 9.0);  // (1 + 2) x 3
  }
}

TEST(ProcessGroup, AllToAllSwapsEqualPartsAndCarriesBfloat16AsItsBits) {
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    test::run_ranks(3, [dtype](int rank, ProcessGroup& g) {
      // Rank r's part for rank q holds 100 r + q (and a bfloat16 value float16 cannot hold).
      torch::Tensor input = torch::empty({6}, dtype);
      for (int q = 0; q < 3; ++q) {
        input.narrow(0, 2 * q, 2).copy_(torch::tensor({100.0 * rank + q, 1e30 + rank}));
      }
      torch::Tensor output = torch::zeros({6}, dtype);
      g.all_to_all(output, input);
      for (int q = 0; q < 3; ++q) {  // part q: rank q's part for this rank
        torch::Tensor want = torch::tensor({100.0 * q + rank, 1e30 + q}).to(dtype);
        EXPECT_TRUE(torch::equal(output.narrow(0, 2 * q, 2), want)) << rank << " " << q;
      }
      const CollectiveRecord record = g.flight().latest();
      EXPECT_STREQ(record.op, "all_to_all");
      EXPECT_EQ(record.bytes, 6 * input.element_size());
      EXPECT_GE(record.end, 0);
    });
  }
}

TEST(ProcessGroup, SendMeetsTheRecvOfItsTagAndCarriesAnyDtypeAsItsBytes) {
  torch::manual_seed(2);
  const auto floats = torch::randn({3, 4});
  const auto halves = torch::randn({5}).to(torch::kBFloat16);
  test::run_ranks(2, [&](int rank, ProcessGroup& group) {
    if (rank == 0) {
      group.send(halves, 1, /*tag=*/7);
      group.send(floats.t(), 1, /*tag=*/3);  // a view: sent as its contiguous copy
    } else {
      auto b = torch::empty({5}, torch::kBFloat16);
      auto f = torch::empty({4, 3});
      group.recv(b, 0, 7);
      group.recv(f, 0, 3);
      EXPECT_TRUE(b.equal(halves));
      EXPECT_TRUE(f.equal(floats.t()));
    }
  });
}

}  // namespace
}  // namespace unitrain
