#include "unitrain/sweep/sweep.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "unitrain/core/error.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/engine/setup/run_dir_lock.h"
#include "unitrain/launch/launcher.h"
#include "unitrain/log/console.h"
#include "unitrain/sweep/asha_schedule.h"
#include "unitrain/sweep/job_outcome.h"
#include "unitrain/sweep/search_space.h"
#include "unitrain/sweep/sweep_results.h"
#include "unitrain/sweep/trial_configs.h"
#include "unitrain/sweep/trial_process.h"
#include "unitrain/threads/cpu_budget.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

volatile sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) { g_stop_signal = sig; }

/// SIGINT and SIGTERM set g_stop_signal while alive; the old handlers come back after.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    for (int sig : {SIGINT, SIGTERM}) ::sigaction(sig, &sa, &old_[sig]);
  }
  ~StopSignals() {
    for (auto& [sig, old] : old_) ::sigaction(sig, &old, nullptr);
  }

 private:
  std::map<int, struct sigaction> old_;
};

/// Waits (up to a minute) until no process holds the trial folder's lock: a trial of a killed
/// sweep saves its checkpoint after the SIGTERM its death sent it.
void wait_for_run_dir(const std::string& run_dir) {
  if (!fs::exists(RunDirLock::path_of(run_dir))) return;
  const auto end = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (true) {
    try {
      RunDirLock::acquire(run_dir);
      return;
    } catch (const ConfigError&) {
      if (std::chrono::steady_clock::now() > end) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

class SweepRunner {
 public:
  SweepRunner(const SweepOptions& o, const std::string& executable,
              const std::vector<std::string>& plugins)
      : o_(o),
        exe_(executable),
        plugins_(plugins),
        space_(SearchSpace::from_config(o.space, o.strategy == SweepStrategy::Grid
                                                     ? SearchSpace::GridOrder::InOrder
                                                     : SearchSpace::GridOrder::Shuffled)),
        configs_(o, space_, read_cpu_limits().usable()),
        schedule_(static_cast<int>(configs_.rungs().size()), o.reduction_factor, o.higher_is_better,
                  max_trials()) {}

  SweepResult run() {
    for (int64_t k = 0; k < max_trials(); ++k) {
      configs_.resolve(k, space_.trial(o_.seed, k), static_cast<int>(configs_.rungs().size()) - 1);
    }
    fs::create_directories(o_.folder() + "/configs");
    fs::create_directories(o_.folder() + "/logs");
    const auto lock = RunDirLock::acquire(o_.folder(), "another sweep_dir (or name)");
    continue_earlier_sweep();
    StopSignals signals;
    int exit_code = loop();
    SweepResult result = conclude(exit_code);
    return result;
  }

 private:
  struct Running {
    SweepJob job;
    std::unique_ptr<TrialProcess> process;
    bool stopped_by_sweep = false;
    int resume_code = 75;  ///< the trial's checkpoint.on_signal.exit_code
  };

  int64_t max_trials() const {
    if (o_.max_trials > 0) return o_.max_trials;
    UT_CHECK(o_.strategy == SweepStrategy::Grid && space_.grid_only(),
             "max_trials: give the "
             "number of trials (0, the grid's size, needs strategy grid and only grid keys)");
    return space_.grid_size();
  }
  std::string state_file() const { return o_.folder() + "/sweep.json"; }

  void continue_earlier_sweep() {
    if (!fs::exists(state_file())) return;
    trials_ = read_trial_records(state_file());
    for (TrialRecord& t : trials_) {
      UT_CHECK(t.parameters == space_.trial(o_.seed, t.index), state_file(), ": trial ", t.index,
               " was drawn with other parameters (another space or seed): give this sweep "
               "another sweep_dir (or name), or remove the folder");
      if (t.status == TrialStatus::Running || t.status == TrialStatus::Failed ||
          t.status == TrialStatus::Paused) {
        queue_.push_back({t.index, t.target_rung});
        t.restarts = 0;
      }
    }
    log::info(
        fmt::format("continuing the sweep in {}: {} trials so far", o_.folder(), trials_.size()));
    for (const auto& line : results_table(trials_, o_.metric, o_.higher_is_better)) {
      log::info("  " + line);
    }
  }

  std::optional<SweepJob> next_job() {
    if (!queue_.empty()) {
      const SweepJob job = queue_.front();
      queue_.pop_front();
      return job;
    }
    return schedule_.next(trials_);
  }

  int loop() {
    while (true) {
      while (!g_stop_signal && running_.size() < static_cast<size_t>(o_.parallel)) {
        const auto job = next_job();
        if (!job) break;
        start(*job);
      }
      if (running_.empty()) return g_stop_signal ? 128 + g_stop_signal : 0;
      if (g_stop_signal) {
        for (Running& r : running_) {
          if (!r.stopped_by_sweep) r.process->signal(SIGTERM);
          r.stopped_by_sweep = true;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      for (auto it = running_.begin(); it != running_.end();) {
        const auto status = it->process->poll();
        if (!status) {
          ++it;
          continue;
        }
        const Running ended = std::move(*it);
        it = running_.erase(it);
        try {
          end(ended, *status);
        } catch (const ConfigError&) {
          for (Running& r : running_) r.process->signal(SIGTERM);
          while (!running_.empty()) {  // they save a checkpoint; the sweep continues them
            if (running_.back().process->poll()) running_.pop_back();
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          }
          write_trial_records(state_file(), trials_);
          throw;
        }
      }
    }
  }

  void start(const SweepJob& job) {
    if (job.trial == static_cast<int64_t>(trials_.size())) {
      TrialRecord t;
      t.index = job.trial;
      t.parameters = space_.trial(o_.seed, job.trial);
      trials_.push_back(std::move(t));
    }
    TrialRecord& t = trials_[job.trial];
    t.status = TrialStatus::Running;
    t.target_rung = job.rung;
    write_trial_records(state_file(), trials_);
    // configs/ and logs/ name a trial as its folder does (trial-07 among 10 or more).
    const std::string name = fs::path(configs_.run_dir(job.trial)).filename().string();
    const std::string config = fmt::format("{}/configs/{}.yaml", o_.folder(), name);
    const Config resolved = configs_.resolve(job.trial, t.parameters, job.rung);
    std::ofstream(config, std::ios::trunc) << resolved.dump() << "\n";
    const int resume_code =
        static_cast<int>(RunSettings::from_config(resolved).checkpoint.on_signal_exit_code);
    wait_for_run_dir(configs_.run_dir(job.trial));
    std::vector<std::string> command = {exe_};
    if (o_.nproc_per_node > 0) {
      command.insert(command.end(),
                     {"launch", "--nproc-per-node", std::to_string(o_.nproc_per_node),
                      "--master-port", std::to_string(o_.master_port + job.trial), "--"});
    }
    command.insert(command.end(), {"train", config});
    for (const auto& p : plugins_) command.insert(command.end(), {"--plugin", p});
    const std::string log = fmt::format("{}/logs/{}.log", o_.folder(), name);
    std::string values;
    for (const auto& [k, v] : t.parameters) values += fmt::format(" {}={}", k, v);
    log::info(fmt::format("trial {}: {} to {}{}", job.trial,
                          job.rung == 0 ? "training" : "promoted, resuming",
                          configs_.rungs()[job.rung].str(), values));
    running_.push_back({job, std::make_unique<TrialProcess>(command, log), false, resume_code});
  }

  void end(const Running& ended, int status) {
    TrialRecord& t = trials_[ended.job.trial];
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    // A job that paused (exit: its resume code, and summary.json says so) is not finished:
    // it is resumed when the sweep is continued, and never ranked by what it has so far.
    const auto pause = WIFEXITED(status) && WEXITSTATUS(status) == ended.resume_code
                           ? read_pause(configs_.run_dir(t.index), o_.metric)
                           : std::nullopt;
    if (pause) {
      t.status = TrialStatus::Paused;
      t.steps = pause->second;
      paused_exit_code_ = ended.resume_code;
      log::info(fmt::format(
          "trial {}: paused at {} steps, before {}; {}; running the same sweep again resumes it",
          t.index, pause->second, configs_.rungs()[ended.job.rung].str(), pause->first));
    } else if (ok) {
      const JobResult r = read_job_result(configs_.run_dir(t.index), o_.metric);
      if (!std::isfinite(r.metric)) return diverged(t, r);
      t.rung_metrics.resize(ended.job.rung);
      t.rung_metrics.push_back(r.metric);
      t.steps = r.steps;
      t.epochs = r.epochs;
      const bool last = ended.job.rung + 1 == static_cast<int>(configs_.rungs().size());
      t.status = r.stopped_early ? TrialStatus::StoppedEarly
                 : last          ? TrialStatus::Finished
                                 : TrialStatus::Stopped;
      t.error.clear();
      const std::string length = configs_.rungs()[ended.job.rung].str();
      log::info(r.stopped_early
                    ? fmt::format("trial {}: {} {:.4f}; stopped early after {} epoch{}, {} "
                                  "steps (of {})",
                                  t.index, o_.metric, r.metric, r.epochs, r.epochs == 1 ? "" : "s",
                                  r.steps, length)
                    : fmt::format("trial {}: {} {:.4f} at {} ({} steps)", t.index, o_.metric,
                                  r.metric, length, r.steps));
    } else if (ended.stopped_by_sweep) {
      t.steps = std::max(t.steps, steps_done(configs_.run_dir(t.index)));  // saved on the signal
      log::info(fmt::format("trial {}: stopped ({}); the same sweep resumes it", t.index,
                            describe_exit(status)));
    } else if (ended_by_signal(status, ended.resume_code) && t.restarts < o_.retries) {
      ++t.restarts;
      log::warn(fmt::format("trial {} {}: restarting it from its checkpoint", t.index,
                            describe_exit(status)));
      queue_.push_front(ended.job);
    } else {
      t.status = TrialStatus::Failed;
      t.error = describe_exit(status);
      log::warn(fmt::format("trial {} failed: it {} (see {}/logs/{}.log)", t.index, t.error,
                            o_.folder(), fs::path(configs_.run_dir(t.index)).filename().string()));
    }
    write_trial_records(state_file(), trials_);
    write_sweep_results(o_.folder(), trials_, o_.metric, o_.higher_is_better, space_.scales());
  }

  /// A trial that trained to its end with a metric that is not a number (on_nonfinite: skip
  /// kept it going): failed, not ranked, and the sweep goes on.
  void diverged(TrialRecord& t, const JobResult& r) {
    t.status = TrialStatus::Failed;
    t.steps = r.steps;
    t.epochs = r.epochs;
    t.error = fmt::format("diverged: its validation reported {} = {}", o_.metric, r.metric);
    log::warn(fmt::format("trial {} failed: it {} (see {}/logs/{}.log)", t.index, t.error,
                          o_.folder(), fs::path(configs_.run_dir(t.index)).filename().string()));
    write_trial_records(state_file(), trials_);
    write_sweep_results(o_.folder(), trials_, o_.metric, o_.higher_is_better, space_.scales());
  }

  SweepResult conclude(int exit_code) {
    SweepResult result;
    result.trials = trials_;
    std::vector<std::string> paused;
    for (const TrialRecord& t : trials_) {
      result.total_steps += t.steps;
      if (t.status == TrialStatus::Failed && exit_code == 0) exit_code = 1;
      if (t.status == TrialStatus::Paused) paused.push_back(std::to_string(t.index));
    }
    // Paused trials: the sweep is not done, and says so with the resume code (a requeueing
    // script runs the same command again, as for a paused run).
    if (!paused.empty() && exit_code == 0) exit_code = paused_exit_code_;
    result.exit_code = exit_code;
    write_sweep_results(o_.folder(), trials_, o_.metric, o_.higher_is_better, space_.scales());
    const auto ranked = rank_trials(trials_, o_.higher_is_better);
    if (!ranked.empty() && ranked.front()->metric()) {
      result.best = ranked.front()->index;
      write_best_config(*result.best);
    }
    log::info(fmt::format("sweep {}: {} trials, {} steps in all; results in {}/results.csv",
                          o_.name, trials_.size(), result.total_steps, o_.folder()));
    for (const auto& line : results_table(trials_, o_.metric, o_.higher_is_better)) {
      log::info("  " + line);
    }
    if (result.best) {
      log::info(fmt::format("best: trial {} ({}/best.yaml){}", *result.best, o_.folder(),
                            paused.empty() ? "" : " so far"));
    }
    if (!paused.empty()) {
      log::warn(fmt::format(
          "trial{} {} paused with a checkpoint: run the same command again to resume {}; exit {}",
          paused.size() == 1 ? "" : "s", fmt::join(paused, ", "),
          paused.size() == 1 ? "it" : "them", exit_code));
    }
    return result;
  }

  /// best.yaml: the best trial's config as a plain run config of a new run, runs/<name>-best.
  void write_best_config(int64_t k) {
    const TrialRecord& t = trials_[k];
    Config best = configs_.resolve(k, t.parameters, std::max(0, t.rung()));
    best.set("name", o_.name + "-best");
    best.set("run_dir", "runs/" + o_.name + "-best");
    // The sweep's share of the CPUs was for trials side by side; a run alone follows the machine.
    for (const auto& [key, value] : configs_.sweep_settings()) {
      if (key == "train.threads") best.set(key, "auto");
    }
    std::ofstream out(o_.folder() + "/best.yaml", std::ios::trunc);
    out << "# The best trial of sweep " << o_.name << " (trial " << k << ", " << o_.metric << " "
        << *t.metric() << "), as a new run.\n";
    if (o_.nproc_per_node > 0) {
      out << "# Its trials ran on " << o_.nproc_per_node << " processes each: unitrain launch "
          << "--nproc-per-node " << o_.nproc_per_node << " -- train " << o_.folder()
          << "/best.yaml\n";
    }
    out << best.dump() << "\n";
  }

  const SweepOptions& o_;
  std::string exe_;
  std::vector<std::string> plugins_;
  SearchSpace space_;
  TrialConfigs configs_;
  AshaSchedule schedule_;
  std::vector<TrialRecord> trials_;
  std::deque<SweepJob> queue_;  // jobs to run before the schedule's: restarts, continued ones
  std::vector<Running> running_;
  int paused_exit_code_ = 75;  ///< a paused trial's resume code: the sweep's exit then
};

}  // namespace

SweepResult run_sweep(const SweepOptions& options, const std::string& executable,
                      const std::vector<std::string>& plugins) {
  return SweepRunner(options, executable, plugins).run();
}

}  // namespace unitrain
