#include "unitrain/launch/worker_group.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "unitrain/core/error.h"
#include "unitrain/core/save_signals.h"
#include "unitrain/launch/signal_pipe.h"

extern char** environ;

namespace unitrain {
namespace {

/// environ with `vars` set, as execve wants it.
std::vector<std::string> worker_environment(const std::map<std::string, std::string>& vars) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (!vars.count(name)) env.push_back(entry);
  }
  for (const auto& [k, v] : vars) env.push_back(k + "=" + v);
  return env;
}

}  // namespace

/// A new folder only this user can open, under $TMPDIR (or /tmp), removed with everything in
/// it when the object goes.
class WorkerGroup::PrivateFolder {
 public:
  PrivateFolder() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/unitrain-rendezvous-XXXXXX";
    UT_CHECK_TRAIN(::mkdtemp(pattern.data()) != nullptr,
                   "launch: cannot create a folder for the rendezvous in ",
                   pattern.substr(0, pattern.rfind('/')), ": ", std::strerror(errno),
                   " (set TMPDIR to a writable folder)");
    path_ = pattern;
  }
  ~PrivateFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  PrivateFolder(const PrivateFolder&) = delete;
  PrivateFolder& operator=(const PrivateFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

WorkerGroup::WorkerGroup(const LaunchOptions& o, int attempt) : o_(o), attempt_(attempt) {}

WorkerGroup::~WorkerGroup() {
  for (auto& w : workers_) {
    if (w.running) ::kill(w.pid, SIGKILL);
    if (w.running) ::waitpid(w.pid, nullptr, 0);
    for (Stream* s : {&w.out, &w.err}) {
      if (s->fd >= 0) ::close(s->fd);
    }
  }
}

void WorkerGroup::start() {
  const int world = o_.nnodes * o_.nproc_per_node;
  // One machine: the workers meet through a file in a fresh private folder (c10d's
  // FileStore), so nothing listens on the network and no port can be taken by another job.
  // Each attempt has its own, so a restart never reads an earlier attempt's keys.
  if (o_.nnodes == 1) rendezvous_ = std::make_unique<PrivateFolder>();
  for (int local = 0; local < o_.nproc_per_node; ++local) {
    Worker w;
    w.local_rank = local;
    w.rank = o_.node_rank * o_.nproc_per_node + local;
    if (!o_.log_dir.empty()) {
      const std::string path = o_.log_dir + "/rank-" + std::to_string(w.rank) + ".log";
      w.log = std::make_unique<std::ofstream>(path, std::ios::app);
      UT_CHECK_TRAIN(w.log->good(), "launch: cannot write ", path);
      if (attempt_ > 0) *w.log << "--- restart " << attempt_ << " ---\n";
    }
    const std::map<std::string, std::string> vars = {
        {"RANK", std::to_string(w.rank)},
        {"WORLD_SIZE", std::to_string(world)},
        {"LOCAL_RANK", std::to_string(local)},
        {"LOCAL_WORLD_SIZE", std::to_string(o_.nproc_per_node)},
        {"GROUP_RANK", std::to_string(o_.node_rank)},
        {"MASTER_ADDR", o_.master_addr},
        {"MASTER_PORT", std::to_string(o_.master_port)},
        {"TORCHELASTIC_RESTART_COUNT", std::to_string(attempt_)},
        {"TORCHELASTIC_MAX_RESTARTS", std::to_string(o_.max_restarts)},
        // The launcher names the rank at the start of each line the worker prints.
        {"UNITRAIN_LAUNCH_PREFIXES_LINES", "1"},
    };
    std::map<std::string, std::string> all = vars;
    if (rendezvous_) all["UNITRAIN_STORE_FILE"] = rendezvous_->path() + "/store";
    // Several machines: machine 0's launcher hosts the store (launch_rounds.h); each start's
    // workers meet in it under their own prefix (TORCHELASTIC_RESTART_COUNT).
    if (o_.nnodes > 1) all["TORCHELASTIC_USE_AGENT_STORE"] = "True";
    spawn(w, worker_environment(all));
    workers_.push_back(std::move(w));
  }
}

void WorkerGroup::forward(int sig) {
  for (auto& w : workers_) {
    if (w.running) ::kill(w.pid, sig);
  }
}

void WorkerGroup::stop_all() {
  if (stop_deadline_) return;
  forward(SIGTERM);
  stop_deadline_ = std::make_unique<Clock::time_point>(
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o_.grace_seconds * 1000)));
}

void WorkerGroup::kill_if_past_grace() {
  if (stop_deadline_ && Clock::now() >= *stop_deadline_) forward(SIGKILL);
}

const WorkerGroup::Worker* WorkerGroup::reap() {
  const Worker* failed = nullptr;
  for (auto& w : workers_) {
    if (!w.running) continue;
    int status = 0;
    pid_t r = ::waitpid(w.pid, &status, WNOHANG);
    if (r != w.pid) continue;
    w.running = false;
    w.status = status;
    const bool ok = WIFEXITED(status) &&
                    (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == o_.resume_exit_code);
    if (!ok && !failed && !first_failure_) failed = &w;
  }
  if (failed) first_failure_ = failed;
  return failed;
}

bool WorkerGroup::any_running() const {
  for (const auto& w : workers_) {
    if (w.running) return true;
  }
  return false;
}

void WorkerGroup::pump(int signal_fd, int timeout_ms, std::vector<int>& signals) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Worker*, Stream*>> owners;
  fds.push_back({signal_fd, POLLIN, 0});
  owners.push_back({nullptr, nullptr});
  for (auto& w : workers_) {
    for (Stream* s : {&w.out, &w.err}) {
      if (s->fd < 0) continue;
      fds.push_back({s->fd, POLLIN, 0});
      owners.push_back({&w, s});
    }
  }
  int n = ::poll(fds.data(), fds.size(), timeout_ms);
  if (n <= 0) return;
  if (fds[0].revents & POLLIN) {
    char buf[64];
    ssize_t got;
    while ((got = ::read(signal_fd, buf, sizeof buf)) > 0) {
      for (ssize_t i = 0; i < got; ++i) signals.push_back(buf[i]);
    }
  }
  for (size_t i = 1; i < fds.size(); ++i) {
    if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    auto [w, s] = owners[i];
    char buf[65536];
    ssize_t got = ::read(s->fd, buf, sizeof buf);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      flush(*w, *s, s == &w->err, true);
      ::close(s->fd);
      s->fd = -1;
      continue;
    }
    s->pending.append(buf, static_cast<size_t>(got));
    flush(*w, *s, s == &w->err, false);
  }
}

bool WorkerGroup::streams_open() const {
  for (const auto& w : workers_) {
    if (w.out.fd >= 0 || w.err.fd >= 0) return true;
  }
  return false;
}

void WorkerGroup::spawn(Worker& w, const std::vector<std::string>& env) {
  int out[2], err[2];
  UT_CHECK_TRAIN(::pipe2(out, O_CLOEXEC) == 0 && ::pipe2(err, O_CLOEXEC) == 0,
                 "launch: pipe: ", std::strerror(errno));
  std::vector<char*> argv, envp;
  for (const auto& a : o_.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  // Signals stay blocked across fork until the child has reset their handlers: a SIGTERM
  // sent to a child that has not exec'd yet must not run the launcher's handler there
  // (which would write into the launcher's signal pipe, as if the launcher had got it).
  sigset_t block, old_mask;
  sigemptyset(&block);
  for (int sig : SignalPipe::signals()) sigaddset(&block, sig);
  ::pthread_sigmask(SIG_BLOCK, &block, &old_mask);
  const pid_t pid = ::fork();
  if (pid != 0) ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  UT_CHECK_TRAIN(pid >= 0, "launch: cannot start a worker: ", std::strerror(errno));
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : SignalPipe::signals()) ::sigaction(sig, &dfl, nullptr);
    sigset_t kept;
    sigemptyset(&kept);
    if (o_.workers_hold_signals) {
      for (const SaveSignal& s : save_signals()) sigaddset(&kept, s.number);
    }
    ::sigprocmask(SIG_SETMASK, &kept, nullptr);
    ::execvpe(argv[0], argv.data(), envp.data());
    const char* msg = "launch: cannot run the worker command: ";
    ssize_t ignored = ::write(STDERR_FILENO, msg, std::strlen(msg));
    ignored = ::write(STDERR_FILENO, argv[0], std::strlen(argv[0]));
    ignored = ::write(STDERR_FILENO, "\n", 1);
    (void)ignored;
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  w.pid = pid;
  w.running = true;
  w.out.fd = out[0];
  w.err.fd = err[0];
}

void WorkerGroup::flush(Worker& w, Stream& s, bool is_err, bool all) {
  size_t start = 0, nl;
  while ((nl = s.pending.find('\n', start)) != std::string::npos) {
    emit(w, s.pending.substr(start, nl - start), is_err);
    start = nl + 1;
  }
  s.pending.erase(0, start);
  if (all && !s.pending.empty()) {
    emit(w, s.pending, is_err);
    s.pending.clear();
  }
}

void WorkerGroup::emit(Worker& w, const std::string& line, bool is_err) {
  if (w.log) *w.log << line << "\n" << std::flush;
  const std::string prefixed = "[rank " + std::to_string(w.rank) + "] " + line;
  if (o_.output) {
    o_.output(prefixed, is_err);
  } else {
    const std::string text = prefixed + "\n";
    ssize_t ignored = ::write(is_err ? STDERR_FILENO : STDOUT_FILENO, text.data(), text.size());
    (void)ignored;
  }
}

}  // namespace unitrain
