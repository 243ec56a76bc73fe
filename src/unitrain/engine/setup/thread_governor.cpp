#include "unitrain/engine/setup/thread_governor.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "unitrain/core/cpu_budget.h"
#include "unitrain/engine/setup/openmp_waits.h"

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

ThreadCount choose_thread_count(int64_t configured, const char* omp_num_threads,
                                int64_t local_workers, double usable, int64_t recorded) {
  ThreadCount c;
  const int64_t omp = omp_num_threads != nullptr ? std::atoll(omp_num_threads) : 0;
  std::string given;  // the explicit setting that chose the count, for the warning
  if (configured > 0) {
    c.threads = configured;
    c.why = fmt::format("threads {} (train.threads)", configured);
    given = fmt::format("train.threads {}", configured);
  } else if (omp > 0) {
    c.threads = omp;
    c.why = fmt::format("threads {} (OMP_NUM_THREADS={}; train.threads: auto follows it)", omp,
                        omp_num_threads);
    given = fmt::format("OMP_NUM_THREADS={}", omp_num_threads);
  } else if (recorded > 0) {
    c.threads = recorded;
    c.automatic = true;
    c.why = fmt::format(
        "threads {} (auto: the count this run started with, kept so that its arithmetic stays "
        "the same; {:g} CPU{} usable by this process now)",
        recorded, std::round(usable * 100) / 100, usable == 1 ? "" : "s");
  } else {
    const int64_t workers = std::max<int64_t>(1, local_workers);
    // A CPU 70% available (a cgroup quota of 1.7) counts as one.
    c.threads = std::max<int64_t>(1, int64_t(std::floor(usable / double(workers) + 0.3)));
    c.automatic = true;
    c.why = fmt::format(
        "threads {} (auto: {:g} CPU{} usable by this process, {} worker process{} of this job "
        "on this machine; kept for the whole run, whatever the load, so that its numbers do not "
        "depend on it)",
        c.threads, std::round(usable * 100) / 100, usable == 1 ? "" : "s", workers,
        workers == 1 ? "" : "es");
  }
  if (!given.empty() && recorded > 0 && recorded != c.threads) {
    c.warning = fmt::format(
        "{}: this run computed with {} thread{} before this resume; LibTorch's sums and "
        "OpenBLAS's products split their work by thread, so with {} the resumed run is not "
        "bitwise equal to one that never stopped (train.threads: auto keeps the run's count)",
        given, recorded, recorded == 1 ? "" : "s", c.threads);
  }
  return c;
}

namespace {

/// Readings of other programs' load: the first since startup_load_probe() began (the process's
/// set-up), then each since the previous one.
ThreadGovernor::LoadReader proc_stat_reader() {
  auto probe = std::make_shared<std::unique_ptr<CpuLoadProbe>>();
  return [probe] {
    // The kernel counts CPU time in 10 ms ticks: a reading spans 50 ms at least (the set-up of
    // a run from the command line usually takes longer; a wrong first reading is corrected by
    // the first reading while training, 2 s later).
    const double span = *probe ? (*probe)->seconds() : startup_load_probe().seconds();
    if (span < 0.05) std::this_thread::sleep_for(std::chrono::duration<double>(0.05 - span));
    const double busy = *probe ? (*probe)->others_busy() : startup_load_probe().others_busy();
    *probe = std::make_unique<CpuLoadProbe>(sibling_workers());
    return busy;
  };
}

/// The real switch: a ShortOpenMpWaits lives while waits are short.
ThreadGovernor::WaitSwitch openmp_wait_switch() {
  auto waits = std::make_shared<std::unique_ptr<ShortOpenMpWaits>>();
  return [waits](bool on) {
    if (on && !*waits) *waits = std::make_unique<ShortOpenMpWaits>();
    if (!on) waits->reset();
  };
}

}  // namespace

ThreadGovernor::ThreadGovernor(ThreadCount count, int64_t local_workers)
    : ThreadGovernor(
          std::move(count), local_workers, read_cpu_limits().usable(), proc_stat_reader(),
          ShortOpenMpWaits::unavailable_reason().empty() ? openmp_wait_switch() : WaitSwitch()) {
  if (count_.threads > 1 && !switch_waits_) {
    waits_why_ = "waiting: as the OpenMP runtime's settings say (" +
                 ShortOpenMpWaits::unavailable_reason() + ")";
  }
}

ThreadGovernor::ThreadGovernor(ThreadCount count, int64_t local_workers, double limits_usable,
                               LoadReader read_load, WaitSwitch switch_waits,
                               std::chrono::duration<double> interval)
    : count_(std::move(count)),
      workers_(std::max<int64_t>(1, local_workers)),
      usable_(limits_usable),
      read_load_(std::move(read_load)),
      switch_waits_(count_.threads > 1 ? std::move(switch_waits) : WaitSwitch()),
      interval_(interval),
      last_check_(std::chrono::steady_clock::now()) {
  set_threads(count_.threads);
  if (!switch_waits_) return;
  const double others = read_load_();
  short_ = busy(others);
  if (short_) switch_waits_(true);
  waits_why_ = fmt::format(
      "waiting: follows other programs' load (they kept {:.1f} of {:g} CPUs busy: threads {} "
      "while they wait); the count stays {}",
      others, std::round(usable_ * 100) / 100, short_ ? "sleep" : "spin", count_.threads);
}

ThreadGovernor::~ThreadGovernor() {
  if (short_) switch_waits_(false);
}

bool ThreadGovernor::busy(double others) const {
  const double free = std::max(1.0, usable_ - others);
  // A CPU 70% free counts as one: fewer free CPUs per worker than threads is busy.
  return int64_t(std::floor(free / double(workers_) + 0.3)) < count_.threads;
}

std::optional<std::string> ThreadGovernor::follow() {
  if (!switch_waits_) return std::nullopt;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_check_ < interval_) return std::nullopt;
  last_check_ = now;
  const double others = read_load_();
  const bool now_busy = busy(others);
  if (!now_busy && short_) {
    if (++quiet_votes_ < 2) return std::nullopt;  // a second reading in a row confirms it
  } else {
    quiet_votes_ = 0;
    if (now_busy == short_) return std::nullopt;
  }
  quiet_votes_ = 0;
  short_ = now_busy;
  switch_waits_(short_);
  return fmt::format(
      "threads {} while they wait: other programs keep {:.1f} of {:g} CPUs busy (the count "
      "stays {}, and with it the numbers)",
      short_ ? "sleep" : "spin again", others, std::round(usable_ * 100) / 100, count_.threads);
}

}  // namespace unitrain
