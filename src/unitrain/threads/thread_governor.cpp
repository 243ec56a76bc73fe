#include "unitrain/threads/thread_governor.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "unitrain/threads/cpu_budget.h"
#include "unitrain/threads/team_placement.h"

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

/// The real placement: a TeamPlacement of the calling thread's team.
ThreadGovernor::Placement team_placement(int64_t threads) {
  auto team = std::make_shared<TeamPlacement>(threads);
  return [team](int64_t cpus) { team->place(cpus); };
}

}  // namespace

ThreadGovernor::ThreadGovernor(ThreadCount count, int64_t local_workers)
    : ThreadGovernor(count, local_workers, read_cpu_limits().usable(), proc_stat_reader(),
                     count.threads > 1 && TeamPlacement::unavailable_reason().empty()
                         ? team_placement(count.threads)
                         : Placement()) {
  if (count_.threads > 1 && !place_) {
    placement_why_ = "placement: as the OpenMP runtime's settings say (" +
                     TeamPlacement::unavailable_reason() + ")";
  }
}

ThreadGovernor::ThreadGovernor(ThreadCount count, int64_t local_workers, double limits_usable,
                               LoadReader read_load, Placement place,
                               std::chrono::duration<double> interval)
    : count_(std::move(count)),
      workers_(std::max<int64_t>(1, local_workers)),
      usable_(limits_usable),
      read_load_(std::move(read_load)),
      place_(count_.threads > 1 ? std::move(place) : Placement()),
      interval_(interval),
      last_check_(std::chrono::steady_clock::now()) {
  set_threads(count_.threads);
  if (!place_) return;
  const double others = read_load_();
  confined_to_ = cpus_for(others);
  if (confined_to_ > 0) place_(confined_to_);
  placement_why_ = fmt::format(
      "placement: follows other programs' load (they kept {:.1f} of {:g} CPUs busy: {}); the "
      "count stays {}",
      others, std::round(usable_ * 100) / 100, where(confined_to_), count_.threads);
}

ThreadGovernor::~ThreadGovernor() {
  if (confined_to_ > 0) place_(0);
}

int64_t ThreadGovernor::cpus_for(double others) const {
  const double free = std::max(1.0, usable_ - others);
  // A CPU 70% free counts as one: fewer free CPUs per worker than threads is busy.
  const int64_t cpus = std::max<int64_t>(1, int64_t(std::floor(free / double(workers_) + 0.3)));
  return cpus < count_.threads ? cpus : 0;
}

std::string ThreadGovernor::where(int64_t cpus) const {
  if (cpus == 0) return "threads on every CPU";
  return fmt::format("threads on {} CPU{}, sleeping while they wait", cpus, cpus == 1 ? "" : "s");
}

std::optional<std::string> ThreadGovernor::follow() {
  if (!place_) return std::nullopt;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_check_ < interval_) return std::nullopt;
  last_check_ = now;
  const double others = read_load_();
  const int64_t want = cpus_for(others);
  // Wider is every CPU (0) or more CPUs than now: confirmed by a second reading in a row.
  const bool wider = confined_to_ > 0 && (want == 0 || want > confined_to_);
  if (wider) {
    if (++raise_votes_ < 2) return std::nullopt;
  } else {
    raise_votes_ = 0;
    if (want == confined_to_) return std::nullopt;
  }
  raise_votes_ = 0;
  confined_to_ = want;
  place_(want);
  return fmt::format(
      "{}: other programs keep {:.1f} of {:g} CPUs busy (the count stays {}, and with it the "
      "numbers)",
      where(want), others, std::round(usable_ * 100) / 100, count_.threads);
}

}  // namespace unitrain
