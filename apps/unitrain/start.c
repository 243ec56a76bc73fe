/* unitrain: the command's first instructions. A scheduler's signal is never fatal to a run
 * (docs/distributed.md, "Preemption"): the signals a run saves on (SIGTERM, SIGUSR1, SIGUSR2,
 * SIGHUP, SIGXCPU: core/save_signals.h) are blocked here, ~1 ms after exec (this program needs
 * the C library only), and stay blocked through the exec of the command's program
 * (libexec/unitrain/unitrain, main.cpp: loading LibTorch and running its initializers takes
 * ~0.6 s) until its command takes them (Command::take_stop_signals): train holds them, so one
 * that came during start-up stops the run after its first micro-batch with a checkpoint and
 * exit 75; other commands unblock them, and a pending one then acts as it would have. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  (void)argc;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGUSR2);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGXCPU);
  sigprocmask(SIG_BLOCK, &set, NULL);

  /* The program, from this file's folder: where it is installed (bin/ -> libexec/unitrain/),
   * then where the build tree has it. */
  char dir[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
  if (n <= 0) {
    fprintf(stderr, "unitrain: cannot read /proc/self/exe: %s\n", strerror(errno));
    return 127;
  }
  dir[n] = '\0';
  char* slash = strrchr(dir, '/');
  if (slash != NULL) *slash = '\0';
  const char* const candidates[] = {UNITRAIN_PROGRAM_INSTALLED, UNITRAIN_PROGRAM_BUILT};
  char program[PATH_MAX];
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; ++i) {
    if (snprintf(program, sizeof program, "%s/%s", dir, candidates[i]) >= (int)sizeof program)
      continue;
    if (access(program, X_OK) == 0) {
      execv(program, argv);
      fprintf(stderr, "unitrain: cannot run %s: %s\n", program, strerror(errno));
      return 127;
    }
  }
  fprintf(stderr, "unitrain: its program is missing: neither %s/%s nor %s/%s exists\n", dir,
          candidates[0], dir, candidates[1]);
  return 127;
}
