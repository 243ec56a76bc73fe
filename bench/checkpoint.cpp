// bench/checkpoint: checkpoint save and load throughput against a plain write and read of the
// same bytes on the same disk, and the training time an async save costs against a sync one.
//   build/bench/bench_checkpoint [dir=/tmp] [rounds=3] [io|fit]   (io or fit: only that half)
// The model: an MLP 4096-4096-2048-1024 (27.3 M parameters, 109 MB) with Adam's state (2 more
// tensors per parameter), about 330 MB per checkpoint.
#include <fcntl.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/checkpointer.h"
#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/registry.h"
#include "unitrain/data/tensor_dataset.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/models/mlp.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The baseline: write each buffer to its own file and fsync it, like a careful plain save.
using PlainFiles = std::vector<std::pair<std::string, std::vector<char>>>;

void plain_write(const std::string& dir, const PlainFiles& files) {
  fs::create_directories(dir);
  for (const auto& f : files) {
    int fd = ::open((dir + "/" + f.first).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    size_t done = 0;
    while (done < f.second.size()) {
      ssize_t n = ::write(fd, f.second.data() + done, f.second.size() - done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    ::fsync(fd);
    ::close(fd);
  }
}

size_t plain_read(const std::string& dir, const PlainFiles& files) {
  size_t total = 0;
  std::vector<char> buf;
  for (const auto& f : files) {
    buf.resize(fs::file_size(dir + "/" + f.first));
    int fd = ::open((dir + "/" + f.first).c_str(), O_RDONLY);
    size_t done = 0;
    while (done < buf.size()) {
      ssize_t n = ::read(fd, buf.data() + done, buf.size() - done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    total += done;
  }
  return total;
}

struct Net : unitrain::TrainModule {
  unitrain::models::Mlp mlp{nullptr};
  Net() { mlp = register_module("mlp", unitrain::models::mlp({4096, 4096, 2048, 1024})); }
  unitrain::StepOutput training_step(const unitrain::Batch& b) override {
    return {torch::cross_entropy_loss(mlp->forward(b.at("x")), b.at("y")), {}};
  }
  unitrain::StepOutput validation_step(const unitrain::Batch& b) override {
    return training_step(b);
  }
};

// Serialises what the trainer saves for `net` (model + optimizer), as the trainer does.
PlainFiles snapshot(Net& net, torch::optim::Optimizer& opt) {
  PlainFiles files;
  files.push_back({"model.pt", unitrain::save_tensor_dict(unitrain::module_state(net, false))});
  files.push_back({"optimizer.pt", unitrain::save_optimizer_state(opt)});
  return files;
}

void throughput(const std::string& dir, int rounds) {
  torch::manual_seed(0);
  Net net;
  torch::optim::Adam opt(net.parameters(), torch::optim::AdamOptions(1e-4));
  auto x = torch::randn({8, 4096});
  auto y = torch::randint(0, 1024, {8});
  net.training_step({{"x", x}, {"y", y}}).loss.backward();
  opt.step();

  size_t bytes = 0;
  for (const auto& f : snapshot(net, opt)) bytes += f.second.size();
  const double mb = static_cast<double>(bytes) / 1e6;
  double params = 0;
  for (const auto& p : net.parameters()) params += static_cast<double>(p.numel());
  std::printf("checkpoint: %.1f MB (parameters %.1f MB + Adam state)\n", mb, params * 4 / 1e6);

  const std::string plain_dir = dir + "/unitrain-bench-plain";
  unitrain::CheckpointOptions sync_options;
  sync_options.keep_last = 1;
  unitrain::Checkpointer checkpointer(sync_options, dir + "/unitrain-bench-ckpt");
  std::vector<double> t_plain_w, t_save, t_plain_r, t_load, save_ratio, load_ratio;
  for (int r = 0; r < rounds; ++r) {
    // Save as the trainer does: snapshots serialised by the Checkpointer (side by side), then
    // written with fsync, the manifest and the rename.
    auto t0 = Clock::now();
    auto model_state = std::make_shared<unitrain::NamedTensors>(unitrain::module_state(net, false));
    std::vector<unitrain::CheckpointFile> save_files;
    save_files.push_back(
        {"model.pt", {}, [model_state] { return unitrain::tensor_dict_image(*model_state); }});
    save_files.push_back({"optimizer.pt", {}, unitrain::optimizer_state_snapshot(opt, false)});
    checkpointer.save({r + 1, std::move(save_files), false});
    t_save.push_back(since(t0));
    const std::string ckpt = checkpointer.store().resolve_link("last");

    auto files = snapshot(net, opt);  // the same bytes, for the baseline
    t0 = Clock::now();
    plain_write(plain_dir, files);
    t_plain_w.push_back(since(t0));
    save_ratio.push_back(t_save.back() / t_plain_w.back());

    // Load: checked read + parse + copy into a model and optimizer, against a plain read of
    // the same files. Saves bypass the page cache (O_DIRECT), so a first read brings them in:
    // both are timed with the cache warm.
    plain_read(ckpt, files);
    t0 = Clock::now();
    plain_read(ckpt, files);
    t_plain_r.push_back(since(t0));

    t0 = Clock::now();
    auto state =
        unitrain::load_tensor_dict(unitrain::CheckpointStore::read(ckpt, "model.pt"), "model.pt");
    unitrain::load_module_state(net, state, true, "model.pt");
    unitrain::load_optimizer_state(opt, unitrain::CheckpointStore::read(ckpt, "optimizer.pt"),
                                   "optimizer.pt");
    t_load.push_back(since(t0));
    load_ratio.push_back(t_load.back() / t_plain_r.back());
  }
  fs::remove_all(plain_dir);
  fs::remove_all(checkpointer.store().root());
  const double w = median(t_plain_w), s = median(t_save), rd = median(t_plain_r),
               l = median(t_load);
  std::printf(
      "save %7.0f MB/s (%.3f s) | plain write+fsync %7.0f MB/s (%.3f s) | save/plain %.2fx (median "
      "of per-round ratios)\n",
      mb / s, s, mb / w, w, median(save_ratio));
  std::printf(
      "load %7.0f MB/s (%.3f s) | plain read        %7.0f MB/s (%.3f s) | load/plain %.2fx\n",
      mb / l, l, mb / rd, rd, median(load_ratio));
}

// Training time lost to checkpoints: fit() with saves every `every` steps (sync, async) minus
// fit() without, per save, on the same model, data and steps.
struct FitTime {
  double seconds;
  double blocked;  ///< inside checkpoint saves
};

FitTime fit_seconds(const std::string& run_dir, const std::string& ckpt, int64_t steps,
                    int threads) {
  fs::remove_all(run_dir);
  auto config = unitrain::Config::from_string(
      "run_dir: " + run_dir +
      "\nseed: 1\noptimizer: {type: adam, lr: 1.0e-4}\n"
      "data: {loader: {batch_size: 16, workers: 0}}\nlog: {trackers: []}\n"
      "train: {threads: '" +
      std::to_string(threads) + "', max_length: " + std::to_string(steps) +
      " steps, log_every: 1000 steps}\n"
      "checkpoint: " +
      ckpt + "\n");
  unitrain::Trainer trainer(config);
  Net net;
  auto data = std::make_shared<unitrain::TensorDataset>(unitrain::Batch{
      {"x", torch::randn({16 * steps, 4096})}, {"y", torch::randint(0, 1024, {16 * steps})}});
  auto t0 = Clock::now();
  unitrain::FitResult r = trainer.fit(net, data);
  const double s = since(t0);
  fs::remove_all(run_dir);
  return {s, r.checkpoint_blocking_seconds};
}

// `threads`: LibTorch's intra-op threads. With 2 on this 2-core machine the writer thread
// competes with training for CPU; with 1 a core is free for it, as on any machine with more
// cores than training threads.
void async_cost(const std::string& dir, int rounds, int threads) {
  const int64_t steps = 36, every = 12;  // 3 saves
  const int64_t saves = steps / every;
  const std::string run_dir = dir + "/unitrain-bench-fit";
  const std::string base =
      "{every: " + std::to_string(every) + " steps, keep_last: 1, final: false";
  std::vector<double> none, sync, async, sync_blocked, async_blocked;
  for (int r = 0; r < rounds; ++r) {
    none.push_back(fit_seconds(run_dir, "{enabled: false}", steps, threads).seconds);
    FitTime s = fit_seconds(run_dir, base + "}", steps, threads);
    FitTime a = fit_seconds(run_dir, base + ", async: true}", steps, threads);
    sync.push_back(s.seconds);
    sync_blocked.push_back(s.blocked);
    async.push_back(a.seconds);
    async_blocked.push_back(a.blocked);
  }
  const double n = median(none), s = median(sync), a = median(async);
  const double lost_sync = (s - n) / saves, lost_async = (a - n) / saves;
  const double block_sync = median(sync_blocked) / saves,
               block_async = median(async_blocked) / saves;
  std::printf(
      "fit %ld steps, %d thread(s), save every %ld: none %.2f s | sync %.2f s | async %.2f s\n",
      static_cast<long>(steps), threads, static_cast<long>(every), n, s, a);
  std::printf(
      "  per save, training blocked in save(): sync %.3f s | async %.3f s | async/sync %.1f%%\n",
      block_sync, block_async, 100.0 * block_async / block_sync);
  std::printf(
      "  per save, fit time lost (blocking + sharing the cores with the writer): sync %.3f s | "
      "async %.3f s | async/sync %.1f%%\n",
      lost_sync, lost_async, 100.0 * lost_async / lost_sync);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "/tmp";
  const int rounds = argc > 2 ? std::stoi(argv[2]) : 3;
  unitrain::register_builtins();
  torch::set_num_threads(2);
  const std::string only = argc > 3 ? argv[3] : "";  // "io" or "fit": one half
  if (only != "fit") throughput(dir, rounds);
  if (only == "io") return 0;
  async_cost(dir, rounds, 2);
  async_cost(dir, rounds, 1);
  return 0;
}
