// bench/ddp/reduce: the gradient all-reduce of unitrain's DataParallelSync against a raw c10d
// all-reduce of the same bytes, and how much of it backward hides. Run under the launcher:
//   build/unitrain launch --nproc-per-node 2 --exec -- build/bench/bench_ddp_reduce [steps=50]
// Model: the MLP 784-1024-1024-10 (7.5 MB of gradients), batch 64, 1 thread per process.
//  - raw: ProcessGroup::all_reduce_sum of one flat tensor of the gradients' size;
//  - sync: DataParallelSync::finish() with every gradient set and no backward (all buckets
//    launched in finish), as the Trainer uses it: gradients are views of the buckets (no copy
//    in or out after the first step) and the average comes from scaling the loss by 1/ranks
//    (average: false), so the reduce is the bytes' all-reduce plus bookkeeping;
//  - overlap: steps of forward + backward + finish with the bucketed hooks, against the same
//    with the reduce launched only after backward, against no reduce at all (one process's
//    work): hidden = (after - hooks) / (after - none).
#include <torch/torch.h>

#include <chrono>
#include <cstdio>

#include "unitrain/models/mlp.h"
#include "unitrain/parallel/data_parallel.h"
#include "unitrain/parallel/dist_env.h"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 50;
  torch::set_num_threads(1);
  unitrain::DistEnv env = unitrain::read_dist_env();
  if (!env.distributed()) {
    std::fprintf(stderr, "run me under unitrain launch --nproc-per-node 2 --exec -- ...\n");
    return 2;
  }
  auto group = unitrain::ProcessGroup::join(env, unitrain::ProcessGroupOptions());
  torch::manual_seed(0);
  auto net = unitrain::models::mlp({784, 1024, 1024, 10});
  auto params = net->parameters();
  int64_t numel = 0;
  for (const auto& p : params) numel += p.numel();
  const double mb = double(numel) * 4 / 1e6;
  auto x = torch::randn({64, 784});
  auto y = torch::randint(0, 10, {64});
  auto step_loss = [&] { return torch::nn::functional::cross_entropy(net->forward(x), y); };

  // Raw all-reduce of the same bytes.
  std::vector<torch::Tensor> flat{torch::randn({numel})};
  group->all_reduce_sum(flat);
  group->barrier();
  auto t0 = Clock::now();
  for (int i = 0; i < steps; ++i) group->all_reduce_sum(flat);
  const double raw = since(t0) / steps;

  // DataParallelSync's reduce of the gradients, launched from finish().
  for (auto& p : params) p.mutable_grad() = torch::randn_like(p);
  double sync_s = 0;
  {
    unitrain::DataParallelOptions trainer_options;
    trainer_options.average = false;
    unitrain::DataParallelSync sync(group, params, trainer_options);
    sync.finish(params);
    group->barrier();
    t0 = Clock::now();
    for (int i = 0; i < steps; ++i) {
      sync.before_backward(false);  // no hooks: every bucket goes in finish()
      sync.finish(params);
    }
    sync_s = since(t0) / steps;
  }

  // Steps with the reduce overlapped (hooks), after backward, and none.
  auto time_steps = [&](int mode) {  // 0 hooks, 1 after backward, 2 none
    unitrain::DataParallelSync sync(group, params, unitrain::DataParallelOptions());
    group->barrier();
    auto start = Clock::now();
    for (int i = 0; i < steps; ++i) {
      net->zero_grad();
      sync.before_backward(mode == 0);
      step_loss().backward();
      if (mode != 2) sync.finish(params);
    }
    if (mode == 2) group->barrier();
    return since(start) / steps;
  };
  time_steps(0);  // warm-up
  const double hooks = time_steps(0), after = time_steps(1), none = time_steps(2);
  if (env.rank == 0) {
    std::printf(
        "gradients %.1f MB | raw c10d all-reduce %.2f ms (%.0f MB/s) | DataParallelSync "
        "%.2f ms (%.0f MB/s) | sync/raw %.2fx\n",
        mb, raw * 1e3, mb / raw, sync_s * 1e3, mb / sync_s, sync_s / raw);
    std::printf(
        "step: no reduce %.2f ms | reduce after backward %.2f ms | bucketed hooks %.2f ms "
        "| reduce time hidden by backward %.0f%%\n",
        none * 1e3, after * 1e3, hooks * 1e3,
        after > none ? 100.0 * (after - hooks) / (after - none) : 0.0);
  }
  group->barrier();
  return 0;
}
