#include "unitrain/sweep/trial_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "unitrain/core/error.h"

namespace unitrain {

TrialProcess::TrialProcess(const std::vector<std::string>& command, const std::string& log_file) {
  const int log = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  UT_CHECK_TRAIN(log >= 0, "sweep: cannot open ", log_file, ": ", std::strerror(errno));
  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);  // the sweep died before prctl
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGINT, &dfl, nullptr);
    ::sigaction(SIGTERM, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(argv[0], argv.data());
    const char* msg = "sweep: cannot run the trial's command\n";
    ssize_t ignored = ::write(STDERR_FILENO, msg, std::strlen(msg));
    (void)ignored;
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::close(log);
  UT_CHECK_TRAIN(pid > 0, "sweep: cannot start a trial: ", std::strerror(fork_errno));
  ::setpgid(pid, pid);  // also here: signal() may come before the child ran setpgid
  pid_ = pid;
}

TrialProcess::~TrialProcess() {
  if (ended_ || pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

std::optional<int> TrialProcess::poll() {
  if (ended_) return std::nullopt;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  ended_ = true;
  return status;
}

void TrialProcess::signal(int sig) {
  if (!ended_) ::kill(-pid_, sig);
}

}  // namespace unitrain
