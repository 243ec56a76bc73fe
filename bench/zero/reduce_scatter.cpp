// bench/zero/reduce_scatter: ZeRO stage 3's gradient reduction on Gloo, which has no
// reduce-scatter in LibTorch 1.13: one reduce per rank's part (to that rank) against an
// all-reduce of the whole of which each rank keeps its part; and the parameter all-gather, for
// scale. Run under the launcher:
//   build/unitrain launch --nproc-per-node W --exec -- build/bench/bench_zero_reduce_scatter
//   [rounds=20]
// Sizes: flat float32 buffers of 1, 8 and 32 MB (a transformer block of d_model 256 to 768 is
// 3-28 MB). Times are the median of `rounds`, the ratio is per size in the same run.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "unitrain/parallel/dist_env.h"
#include "unitrain/parallel/process_group.h"

namespace {

using Clock = std::chrono::steady_clock;

double median_seconds(int rounds, unitrain::ProcessGroup& group, const std::function<void()>& f) {
  std::vector<double> times;
  for (int i = 0; i < rounds; ++i) {
    group.barrier();
    const auto t0 = Clock::now();
    f();
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
  torch::set_num_threads(1);
  const unitrain::DistEnv env = unitrain::read_dist_env();
  if (!env.distributed()) {
    std::fprintf(stderr, "run me under unitrain launch --nproc-per-node 2 --exec -- ...\n");
    return 2;
  }
  auto group = unitrain::ProcessGroup::join(env, unitrain::ProcessGroupOptions());
  const int world = group->world_size();
  using By = unitrain::ProcessGroup::ReduceScatterBy;
  for (int64_t mb : {1, 8, 32}) {
    const int64_t n = mb * 1000 * 1000 / 4 / world;  // elements of each rank's part
    torch::Tensor full = torch::randn({n * world});
    torch::Tensor part = torch::empty({n});
    auto reduce = [&](By by) {
      return median_seconds(rounds, *group, [&] { group->reduce_scatter_sum(part, full, by); });
    };
    const double parts = reduce(By::PartReduces), whole = reduce(By::AllReduce);
    const double gather =
        median_seconds(rounds, *group, [&] { group->all_gather_shards(full, part); });
    if (group->rank() == 0) {
      std::printf(
          "%d processes, %3lld MB: reduce per part %7.2f ms | all-reduce then keep %7.2f ms | "
          "parts/all-reduce %.2fx | all-gather %7.2f ms\n",
          world, static_cast<long long>(mb), parts * 1e3, whole * 1e3, parts / whole, gather * 1e3);
    }
  }
  return 0;
}
