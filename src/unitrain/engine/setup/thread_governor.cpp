#include "unitrain/engine/setup/thread_governor.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "unitrain/core/cpu_budget.h"

namespace unitrain {

std::string loaded_blas_library() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    std::string file = std::filesystem::path(path).filename().string();
    if (file.find("blas") != std::string::npos || file.find("mkl_rt") != std::string::npos) {
      std::error_code ec;
      std::filesystem::path real = std::filesystem::canonical(path, ec);
      return ec ? path : real.string();
    }
  }
  return "unknown";
}

void set_threads(int64_t threads) { torch::set_num_threads(static_cast<int>(threads)); }

namespace {

/// Readings of other programs' load: the first since startup_load_probe() began (the process's
/// set-up), then each since the previous one.
ThreadGovernor::LoadReader proc_stat_reader() {
  auto probe = std::make_shared<std::unique_ptr<CpuLoadProbe>>();
  return [probe] {
    // The kernel counts CPU time in 10 ms ticks: a reading spans 50 ms at least (the set-up of
    // a run from the command line usually takes longer; a wrong first count is corrected by
    // the first reading while training, 2 s later).
    const double span = *probe ? (*probe)->seconds() : startup_load_probe().seconds();
    if (span < 0.05) std::this_thread::sleep_for(std::chrono::duration<double>(0.05 - span));
    const double busy = *probe ? (*probe)->others_busy() : startup_load_probe().others_busy();
    *probe = std::make_unique<CpuLoadProbe>(sibling_workers());
    return busy;
  };
}

}  // namespace

ThreadGovernor::ThreadGovernor(int64_t threads, int64_t local_workers)
    : ThreadGovernor(threads, local_workers, read_cpu_limits().usable(), proc_stat_reader()) {}

ThreadGovernor::ThreadGovernor(int64_t threads, int64_t local_workers, double limits_usable,
                               LoadReader read_load, std::chrono::duration<double> interval)
    : workers_(std::max<int64_t>(1, local_workers)),
      usable_(limits_usable),
      read_load_(std::move(read_load)),
      interval_(interval),
      last_check_(std::chrono::steady_clock::now()) {
  const char* omp = std::getenv("OMP_NUM_THREADS");
  if (threads > 0) {
    threads_ = threads;
    why_ = fmt::format("threads {} (train.threads)", threads);
  } else if (omp != nullptr && std::atoi(omp) > 0) {
    threads_ = std::atoi(omp);
    why_ = fmt::format("threads {} (OMP_NUM_THREADS={}; train.threads: auto follows it)", threads_,
                       omp);
  } else {
    adaptive_ = true;
    const double others = read_load_();
    threads_ = target(others);
    why_ = fmt::format(
        "threads {} (auto: {:g} CPU{} usable by this process, other programs kept {:.1f} busy, "
        "{} worker process{} of this job on this machine; follows their load while training)",
        threads_, std::round(usable_ * 100) / 100, usable_ == 1 ? "" : "s", others, workers_,
        workers_ == 1 ? "" : "es");
  }
  set_threads(threads_);
}

int64_t ThreadGovernor::target(double others) const {
  const double free = std::max(1.0, usable_ - others);
  // A CPU that is 70% free counts as one.
  return std::max<int64_t>(1, int64_t(std::floor(free / double(workers_) + 0.3)));
}

std::optional<std::string> ThreadGovernor::follow() {
  if (!adaptive_) return std::nullopt;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_check_ < interval_) return std::nullopt;
  last_check_ = now;
  const double others = read_load_();
  const int64_t want = target(others);
  if (want > threads_) {
    if (++raise_votes_ < 2) return std::nullopt;  // a second reading in a row confirms it
  } else {
    raise_votes_ = 0;
    if (want == threads_) return std::nullopt;
  }
  raise_votes_ = 0;
  const int64_t before = threads_;
  apply(want);
  return fmt::format(
      "threads {} -> {}: other programs keep {:.1f} of {:g} CPUs busy "
      "(train.threads: auto; set a number to keep one count)",
      before, want, others, std::round(usable_ * 100) / 100);
}

void ThreadGovernor::apply(int64_t threads) {
  threads_ = threads;
  set_threads(threads);
}

}  // namespace unitrain
