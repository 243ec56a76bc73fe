#include "unitrain/launch/launcher.h"

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "unitrain/core/error.h"
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
  bool failed = false;  ///< a worker failed (no signal forwarded before): the others were stopped
};

/// Runs the started `group` until its workers have ended and their output is passed on:
/// forwards SIGINT and the save signals, stops the other workers when one fails.
AttemptEnd supervise(WorkerGroup& group, const LaunchOptions& o, const SignalPipe& signals) {
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
    if (const Worker* w = group.reap(); w && !end.forwarded) {
      end.failed = true;
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
  for (int attempt = 0;; ++attempt) {
    WorkerGroup group(o, attempt);
    group.start();
    const AttemptEnd end = supervise(group, o, signals);
    if (end.forwarded || !end.failed) return status_of_ended_group(group.workers());
    const Worker* first = group.first_failure();
    if (attempt < o.max_restarts) {
      say(o,
          detail::concat("restarting the workers (restart ", attempt + 1, " of ", o.max_restarts,
                         ") after rank ", first->rank, " ", describe_exit(first->status)),
          true);
      continue;
    }
    say(o,
        detail::concat("failed: worker rank ", first->rank, " ", describe_exit(first->status),
                       o.max_restarts > 0 ? detail::concat(" after ", o.max_restarts, " restart(s)")
                                          : std::string()),
        true);
    return 1;
  }
}

}  // namespace unitrain
