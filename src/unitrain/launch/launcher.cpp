#include "unitrain/launch/launcher.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>
#include <torch/csrc/distributed/c10d/Store.hpp>  // LaunchRounds::connect's store

#include "unitrain/core/error.h"
#include "unitrain/launch/launch_rounds.h"
#include "unitrain/launch/signal_pipe.h"
#include "unitrain/launch/worker_group.h"
#include "unitrain/log/console.h"

namespace unitrain {
namespace {

using Worker = WorkerGroup::Worker;

void say(const LaunchOptions& o, const std::string& message, bool is_err) {
  if (o.output) {
    o.output("[launch] " + message, is_err);
  } else if (is_err) {
    log::error("launch: " + message);
  } else {
    log::info("launch: " + message);
  }
}

void check_options(const LaunchOptions& o) {
  UT_CHECK(o.nproc_per_node >= 1, "launch: --nproc-per-node must be at least 1, got ",
           o.nproc_per_node);
  UT_CHECK(o.nnodes >= 1, "launch: --nnodes must be at least 1, got ", o.nnodes);
  UT_CHECK(o.node_rank >= 0 && o.node_rank < o.nnodes, "launch: --node-rank ", o.node_rank,
           " is outside 0..", o.nnodes - 1, " (--nnodes ", o.nnodes, ")");
  UT_CHECK(o.master_port >= 1 && o.master_port <= 65535, "launch: --master-port ", o.master_port,
           " is not a port (1-65535)");
  UT_CHECK(o.max_restarts >= 0, "launch: --max-restarts must be >= 0, got ", o.max_restarts);
  UT_CHECK(o.grace_seconds >= 0, "launch: the grace period must be >= 0 s");
  UT_CHECK(o.rendezvous_seconds > 0, "launch: --rendezvous-timeout must be > 0 s, got ",
           o.rendezvous_seconds);
  UT_CHECK(o.resume_exit_code >= 1 && o.resume_exit_code <= 125,
           "launch: --resume-exit-code must be in 1..125, got ", o.resume_exit_code);
  UT_CHECK(!o.command.empty(), "launch: no worker command given (put it after --)");
}

/// Checks the options and creates the log folder: what a launch needs before its workers start.
void prepare_launch(const LaunchOptions& o) {
  check_options(o);
  if (!o.log_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.log_dir, ec);
    UT_CHECK(!ec, "launch: cannot create the log folder ", o.log_dir, ": ", ec.message());
  }
}

/// How one start of the workers ended.
struct AttemptEnd {
  int forwarded = 0;    ///< the signal the launcher received and forwarded, or 0
  bool failed = false;  ///< a worker of this machine failed (no signal forwarded before)
  /// What ended the round, when a worker failed here or another machine ended it: "rank 2
  /// [on machine 1] was killed by ...". The workers were stopped.
  std::string cause;
  /// The launcher's status if the run ends here: the failed worker's own exit status when it
  /// exited (2 for a config error passes through), 128 + the signal when one killed it (as a
  /// shell says it: a sweep retries a trial so ended), 1 when it failed elsewhere.
  int status = 1;
};

/// "rank 2 on machine 1 exited with status 1" for a failed worker of this machine.
std::string failure_of(const Worker& w, const LaunchOptions& o) {
  return detail::concat("rank ", w.rank,
                        o.nnodes > 1 ? detail::concat(" on machine ", o.node_rank) : std::string(),
                        " ", describe_exit(w.status));
}

/// A round of a run on several machines: whether another machine ended it, and telling them
/// when this one does. Store errors (machine 0's launcher gone) are said once, then ignored:
/// the workers see the loss themselves, and the next round's meeting reports it.
class RoundLink {
 public:
  RoundLink(LaunchRounds* rounds, int round, const LaunchOptions& o)
      : rounds_(rounds), round_(round), o_(o) {}
  /// Another machine's cause for ending the round, looked up at most every 250 ms.
  std::optional<std::string> ended_elsewhere() {
    if (rounds_ == nullptr || lost_ || Clock::now() < next_look_) return std::nullopt;
    next_look_ = Clock::now() + std::chrono::milliseconds(250);
    try {
      return rounds_->ended(round_);
    } catch (const std::exception& e) {
      lost(e);
      return std::nullopt;
    }
  }
  /// Ends the round for every machine; returns the cause that stands (an earlier one wins).
  std::string end(const std::string& cause) {
    if (rounds_ == nullptr || lost_) return cause;
    try {
      return rounds_->end(round_, cause);
    } catch (const std::exception& e) {
      lost(e);
      return cause;
    }
  }

 private:
  using Clock = std::chrono::steady_clock;
  void lost(const std::exception& e) {
    lost_ = true;
    say(o_,
        detail::concat("lost machine 0's launcher (the rendezvous at ", o_.master_addr, ":",
                       o_.master_port, "): ", std::string(e.what()).substr(0, 200)),
        true);
  }
  LaunchRounds* rounds_;
  int round_;
  const LaunchOptions& o_;
  bool lost_ = false;
  Clock::time_point next_look_ = Clock::now();
};

/// Runs the started `group` until its workers have ended and their output is passed on:
/// forwards SIGINT and the save signals, stops the other workers when one fails, and all of
/// them when another machine ended the round.
AttemptEnd supervise(WorkerGroup& group, const LaunchOptions& o, const SignalPipe& signals,
                     RoundLink& link) {
  AttemptEnd end;
  std::vector<int> received;
  while (group.any_running() || group.streams_open()) {
    received.clear();
    group.pump(signals.fd(), group.any_running() ? 100 : 20, received);
    for (int sig : received) {
      if (sig != SIGCHLD) {
        end.forwarded = sig;
        group.forward(sig);
      }
    }
    const bool ending = end.forwarded || !end.cause.empty();
    if (!ending && group.any_running()) {
      if (std::optional<std::string> cause = link.ended_elsewhere()) {
        end.cause = *cause;
        say(o, "the round was ended elsewhere (" + *cause + "); stopping this machine's workers",
            true);
        group.stop_all();
      }
    }
    // Workers stopped because of a signal or another's failure end as they may: no new cause.
    if (const Worker* w = group.reap(); w && !end.forwarded && end.cause.empty()) {
      end.failed = true;
      end.cause = link.end(failure_of(*w, o));
      end.status = WIFEXITED(w->status) ? WEXITSTATUS(w->status) : 128 + WTERMSIG(w->status);
      say(o,
          detail::concat("worker rank ", w->rank, " (pid ", w->pid, ") ", describe_exit(w->status),
                         "; stopping the other workers"),
          true);
      group.stop_all();
    }
    group.kill_if_past_grace();
    if (!group.any_running()) {
      // Drain what the workers wrote last; a grandchild that keeps a pipe open is not
      // waited for longer than 2 s.
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      std::vector<int> late;
      while (group.streams_open() && std::chrono::steady_clock::now() < until) {
        group.pump(signals.fd(), 50, late);
      }
      break;
    }
  }
  return end;
}

/// The signals the launcher received, waiting up to `timeout_ms` for one (SIGCHLD left out).
std::vector<int> signals_within(const SignalPipe& signals, int timeout_ms) {
  pollfd fd{signals.fd(), POLLIN, 0};
  std::vector<int> out;
  if (::poll(&fd, 1, timeout_ms) <= 0) return out;
  char buf[64];
  ssize_t got;
  while ((got = ::read(signals.fd(), buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < got; ++i) {
      if (buf[i] != SIGCHLD) out.push_back(buf[i]);
    }
  }
  return out;
}

/// Several machines: waits until every machine's launcher has arrived at `round` (each after
/// its workers of the round before ended). Returns 0 when they all have, else the launcher's
/// exit status: 128 + a signal received meanwhile, or 1 when a machine's launcher has left or
/// cannot be reached, or did not arrive in time (each said).
int meet(LaunchRounds& rounds, int round, const LaunchOptions& o, const SignalPipe& signals) {
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(o.rendezvous_seconds * 1000));
  const auto say_waiting = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool said = false;
  std::vector<int> missing;
  try {
    rounds.arrive(round);
    while (!(missing = rounds.missing(round)).empty()) {
      if (!said && std::chrono::steady_clock::now() >= say_waiting) {
        said = true;
        say(o,
            detail::concat("waiting for machine(s) ", fmt::format("{}", fmt::join(missing, ", ")),
                           " (up to --rendezvous-timeout ", o.rendezvous_seconds, " s)"),
            false);
      }
      if (const std::vector<std::string> left = rounds.left(); !left.empty()) {
        say(o,
            detail::concat("failed: not starting the workers again, a machine's launcher has ",
                           "ended (", fmt::format("{}", fmt::join(left, "; ")), ")"),
            true);
        return 1;
      }
      if (std::chrono::steady_clock::now() >= deadline) break;
      if (const std::vector<int> got = signals_within(signals, 100); !got.empty()) {
        rounds.leave(detail::concat("stopped by signal ", got.front()));
        return 128 + got.front();
      }
    }
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    say(o,
        detail::concat("failed: lost machine 0's launcher (the rendezvous at ", o.master_addr, ":",
                       o.master_port, "): ", std::string(e.what()).substr(0, 200)),
        true);
    return 1;
  }
  if (missing.empty()) return 0;
  say(o,
      detail::concat("failed: machine(s) ", fmt::format("{}", fmt::join(missing, ", ")),
                     " did not ", round == 0 ? "start" : "get ready to restart", " within ",
                     o.rendezvous_seconds, " s (is `unitrain launch --node-rank ", missing.front(),
                     "` running, with --master-addr ", o.master_addr, " and --master-port ",
                     o.master_port, "?)"),
      true);
  return 1;
}

/// Several machines: tells the other launchers that this one has ended with `status`. Machine
/// 0's, whose store the others read, then waits for them to end too (up to the grace period +
/// 5 s) when `wait` (not after a signal: the others learn it from their workers).
void leave(LaunchRounds& rounds, const LaunchOptions& o, int status, bool wait) {
  try {
    rounds.leave(status == 0 ? "finished" : detail::concat("ended with status ", status));
    if (o.node_rank != 0 || !wait) return;
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(o.grace_seconds * 1000)) +
                       std::chrono::seconds(5);
    while (static_cast<int>(rounds.left().size()) < o.nnodes &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  } catch (const std::exception&) {  // the others read nothing more from it
  }
}

/// The launcher's exit status when no worker failed, or after it forwarded a signal: the first
/// worker's that was not 0 (128 + the signal that killed it), 0 when all were.
int status_of_ended_group(const std::vector<Worker>& workers) {
  for (const auto& w : workers) {
    if (!(WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0)) {
      return WIFEXITED(w.status) ? WEXITSTATUS(w.status) : 128 + WTERMSIG(w.status);
    }
  }
  return 0;
}

}  // namespace

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = ::strsignal(sig);
    return "was killed by signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
  }
  return "ended with wait status " + std::to_string(status);
}

int launch(const LaunchOptions& o) {
  prepare_launch(o);
  SignalPipe signals;
  // Several machines: their launchers agree on each start of the workers (launch_rounds.h).
  std::unique_ptr<LaunchRounds> rounds;
  if (o.nnodes > 1) {
    rounds = std::make_unique<LaunchRounds>(
        LaunchRounds::connect(o), o.node_rank, o.nnodes,
        detail::concat(o.nproc_per_node, " worker(s) on each of ", o.nnodes,
                       " machines with --max-restarts ", o.max_restarts));
  }
  for (int attempt = 0;; ++attempt) {
    if (rounds) {
      if (const int status = meet(*rounds, attempt, o, signals)) return status;
    }
    WorkerGroup group(o, attempt);
    group.start();
    RoundLink link(rounds.get(), attempt, o);
    const AttemptEnd end = supervise(group, o, signals, link);
    if (end.forwarded || end.cause.empty()) {
      const int status = status_of_ended_group(group.workers());
      if (rounds) leave(*rounds, o, status, !end.forwarded);
      return status;
    }
    // Exit status 2 is unitrain's for bad input (a config error): every restart would end so.
    const bool bad_input = end.status == 2;
    if (attempt < o.max_restarts && !bad_input) {
      say(o,
          detail::concat("restarting the workers (restart ", attempt + 1, " of ", o.max_restarts,
                         ") after ", end.cause),
          true);
      continue;
    }
    say(o,
        detail::concat("failed: worker ", end.cause,
                       bad_input && o.max_restarts > attempt
                           ? std::string(" (bad input, e.g. the config: not restarted, "
                                         "a restart would fail the same way)")
                       : o.max_restarts > 0
                           ? detail::concat(" after ", o.max_restarts, " restart(s)")
                           : std::string()),
        true);
    if (rounds) leave(*rounds, o, end.status, true);
    return end.status;
  }
}

}  // namespace unitrain
