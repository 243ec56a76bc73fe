// bench/overhead: unitrain's time per step against a minimal hand-written LibTorch loop on the
// same model, data, optimizer and threads, interleaved round by round so machine noise hits
// both alike. Also reports how long the loop waited for the loader.
//   build/bench/bench_overhead [rounds=5] [steps=60] [case name filter, e.g. mlp]
//       [train.loss_reads: auto|immediate|deferred]
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "unitrain/core/registry.h"
#include "unitrain/data/tensor_dataset.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/models/model.h"
#include "unitrain/objective/objective_module.h"

namespace {

using Clock = std::chrono::steady_clock;
using unitrain::Config;

struct Case {
  std::string name;
  std::string model_yaml;  // the `model` section
  int64_t batch;
  unitrain::Batch data;     // x, y for every example
  int threads = 2;          // intra-op threads
  int64_t step_factor = 1;  // steps = the command line's steps x this (tiny steps need more)
};

// Times steps 2..K of a fit (the first step warms up allocations).
struct StepTimer : unitrain::Callback {
  Clock::time_point first, last;
  void on_step_end(unitrain::Trainer& t, const unitrain::MetricMap&) override {
    (t.state().step == 1 ? first : last) = Clock::now();
  }
};

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string g_loss_reads = "auto";  // train.loss_reads of unitrain's runs (4th argument)

Config run_config(const Case& c, int64_t steps, int64_t workers) {
  const std::string threads = std::to_string(c.threads);
  return Config::from_string("run_dir: /tmp/unitrain-bench-overhead-" + std::to_string(::getpid()) +
                             "\nseed: 1\nmodel: " + c.model_yaml + "\n" +
                             "objective: {losses: [{type: cross_entropy}]}\n"
                             "optimizer: {type: adam, lr: 1.0e-3}\n"
                             "data: {loader: {batch_size: " +
                             std::to_string(c.batch) + ", workers: " + std::to_string(workers) +
                             ", shuffle: true}}\n"
                             "log: {trackers: []}\ncheckpoint: {enabled: false}\n"
                             "train: {threads: '" +
                             threads + "', max_length: " + std::to_string(steps) +
                             " steps, log_every: 1000000 steps, loss_reads: " + g_loss_reads +
                             "}\n");
}

struct UnitrainResult {
  double per_step;
  double wait_fraction;
};

UnitrainResult time_unitrain(const Case& c, int64_t steps, int64_t workers) {
  Config cfg = unitrain::resolve_run_config(run_config(c, steps, workers));
  unitrain::Trainer trainer(cfg);
  unitrain::ObjectiveModule module(cfg.at("model"), cfg.at("objective"));
  auto timer = std::make_shared<StepTimer>();
  trainer.add_callback(timer);
  auto data = std::make_shared<unitrain::TensorDataset>(c.data);
  unitrain::FitResult r = trainer.fit(module, data);
  return {seconds(timer->first, timer->last) / double(steps - 1), r.data_wait_seconds / r.seconds};
}

double time_hand_loop(const Case& c, int64_t steps) {
  Config cfg = unitrain::resolve_run_config(run_config(c, steps, 0));
  torch::set_num_threads(c.threads);
  torch::manual_seed(1);
  unitrain::ModelPtr model = unitrain::model_registry().create(cfg.at("model"));
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));
  const torch::Tensor& x = c.data.at("x");
  const torch::Tensor& y = c.data.at("y");
  const int64_t n = x.size(0);
  torch::Tensor perm = torch::randperm(n);
  Clock::time_point first;
  for (int64_t step = 0, pos = 0; step < steps; ++step, pos += c.batch) {
    if (pos + c.batch > n) {
      perm = torch::randperm(n);
      pos = 0;
    }
    torch::Tensor idx = perm.narrow(0, pos, c.batch);
    torch::Tensor logits = model->forward_all({x.index_select(0, idx)})[0];
    torch::Tensor target = y.index_select(0, idx);
    torch::Tensor loss =
        torch::cross_entropy_loss(logits.flatten(0, logits.dim() - 2), target.flatten());
    opt.zero_grad();
    loss.backward();
    opt.step();
    loss.item<double>();  // the loop reads its loss, as any loop that logs does
    if (step == 0) first = Clock::now();
  }
  return seconds(first, Clock::now()) / double(steps - 1);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const int64_t steps = argc > 2 ? std::atoll(argv[2]) : 60;
  unitrain::register_builtins();
  torch::set_num_threads(2);
  torch::manual_seed(0);
  std::vector<Case> cases;
  cases.push_back({"mlp 64-256-256-10, batch 256",
                   "{type: mlp, args: {sizes: [64, 256, 256, 10]}}",
                   256,
                   {{"x", torch::randn({256 * 40, 64})}, {"y", torch::randint(10, {256 * 40})}}});
  cases.push_back(
      {"cnn 1x28x28, batch 64",
       "{type: cnn, args: {dropout: 0.0}}",
       64,
       {{"x", torch::rand({64 * 40, 1, 28, 28})}, {"y", torch::randint(10, {64 * 40})}}});
  auto tokens = torch::randint(64, {32 * 40, 65});
  cases.push_back(
      {"transformer_lm d128 L2 T64, batch 32",
       "{type: transformer_lm, args: {vocab: 64, d_model: 128, layers: 2, heads: 4, seq_len: 64, "
       "dropout: 0.0}}",
       32,
       {{"x", tokens.narrow(1, 0, 64).contiguous()}, {"y", tokens.narrow(1, 1, 64).contiguous()}}});
  // The tiny case is all overhead: a Linear 16x16 at batch 8 takes microseconds per step.
  cases.push_back({"linear 16x16, batch 8, 1 thread",
                   "{type: mlp, args: {sizes: [16, 16]}}",
                   8,
                   {{"x", torch::randn({8 * 40, 16})}, {"y", torch::randint(16, {8 * 40})}},
                   1,
                   50});
  std::printf("%-38s %9s | %9s %7s | %9s %7s %7s\n", "case (2 intra-op threads unless said)",
              "hand ms", "w0 ms", "ratio", "w2 ms", "ratio", "wait");
  const std::string only = argc > 3 ? argv[3] : "";  // run only cases whose name has this
  if (argc > 4) g_loss_reads = argv[4];
  for (const Case& c : cases) {
    if (!only.empty() && c.name.find(only) == std::string::npos) continue;
    // Per round: the hand loop, unitrain reading in the training thread (workers 0, as the
    // hand loop does), unitrain with 2 loader threads.
    std::vector<double> hand, ut0, ratio0, ut2, ratio2, wait2;
    for (int r = 0; r < rounds; ++r) {
      const int64_t n = steps * c.step_factor;
      double h = time_hand_loop(c, n);
      UnitrainResult u0 = time_unitrain(c, n, 0);
      UnitrainResult u2 = time_unitrain(c, n, 2);
      hand.push_back(h);
      ut0.push_back(u0.per_step);
      ratio0.push_back(u0.per_step / h);
      ut2.push_back(u2.per_step);
      ratio2.push_back(u2.per_step / h);
      wait2.push_back(u2.wait_fraction);
    }
    std::printf("%-38s %9.4f | %9.4f %7.3f | %9.4f %7.3f %6.2f%%\n", c.name.c_str(),
                1e3 * median(hand), 1e3 * median(ut0), median(ratio0), 1e3 * median(ut2),
                median(ratio2), 100 * median(wait2));
  }
  std::filesystem::remove_all("/tmp/unitrain-bench-overhead-" + std::to_string(::getpid()));
  return 0;
}
