#include "unitrain/launch/launcher.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

using test::contains;

struct Captured {
  std::mutex mu;
  std::vector<std::string> out, err;
  std::string all() {
    std::string s;
    for (const auto& l : out) s += l + "\n";
    for (const auto& l : err) s += l + "\n";
    return s;
  }
};

LaunchOptions sh(const std::string& script, Captured& c, int nproc = 2) {
  LaunchOptions o;
  o.nproc_per_node = nproc;
  o.command = {"sh", "-c", script};
  o.output = [&c](const std::string& line, bool is_err) {
    std::lock_guard<std::mutex> lock(c.mu);
    (is_err ? c.err : c.out).push_back(line);
  };
  return o;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

double seconds_of(const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// A port on 127.0.0.1 that nothing listened on a moment ago.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

/// How the launchers of two "machines" on this one ended: each one's status and lines.
struct TwoMachines {
  int status[2] = {-1, -1};
  std::string out[2];
};

/// Runs `script` as every worker of a run on 2 machines of `nproc` workers each: machine 1's
/// launcher in a child process, machine 0's here, both with `change` applied.
TwoMachines launch_two(const std::string& script, int nproc = 2,
                       const std::function<void(LaunchOptions&)>& change = {}) {
  const int port = free_port();
  const std::string dir = test::temp_dir();
  auto options = [&](int node, Captured& c) {
    LaunchOptions o = sh(script, c, nproc);
    o.nnodes = 2;
    o.node_rank = node;
    o.master_port = port;
    o.rendezvous_seconds = 30;
    o.grace_seconds = 2;
    if (change) change(o);
    return o;
  };
  auto run = [&](int node, Captured& c) {
    try {
      return launch(options(node, c));
    } catch (const std::exception& e) {
      c.err.push_back(std::string("threw: ") + e.what());
      return -2;
    }
  };
  TwoMachines ended;
  const pid_t child = ::fork();
  if (child == 0) {
    Captured c;
    const int code = run(1, c);
    test::write_file(dir + "/machine-1.out", c.all());
    ::_exit(code < 0 ? 254 : code);
  }
  Captured c0;
  ended.status[0] = run(0, c0);
  ended.out[0] = c0.all();
  int wait_status = 0;
  ::waitpid(child, &wait_status, 0);
  ended.status[1] = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  ended.out[1] = slurp(dir + "/machine-1.out");
  return ended;
}

TEST(Launcher, WorkersGetTorchrunVariablesAndPrefixedLoggedOutput) {
  Captured c;
  LaunchOptions o =
      sh("echo \"rank $RANK of $WORLD_SIZE local $LOCAL_RANK/$LOCAL_WORLD_SIZE node $GROUP_RANK "
         "at $MASTER_ADDR:$MASTER_PORT restart $TORCHELASTIC_RESTART_COUNT\"; echo oops >&2",
         c);
  o.master_port = 29601;
  o.log_dir = test::temp_dir() + "/logs";
  EXPECT_EQ(launch(o), 0);
  const std::string all = c.all();
  EXPECT_TRUE(contains(all, "[rank 0] rank 0 of 2 local 0/2 node 0 at 127.0.0.1:29601 restart 0"))
      << all;
  EXPECT_TRUE(contains(all, "[rank 1] rank 1 of 2 local 1/2 node 0")) << all;
  ASSERT_EQ(c.err.size(), 2u) << all;
  EXPECT_TRUE(contains(c.err[0], "] oops")) << all;
  const std::string log1 = slurp(o.log_dir + "/rank-1.log");
  EXPECT_TRUE(contains(log1, "rank 1 of 2")) << log1;
  EXPECT_TRUE(contains(log1, "oops")) << log1;
  EXPECT_TRUE(contains(slurp(o.log_dir + "/rank-0.log"), "rank 0 of 2"));
}

TEST(Launcher, UnitrainWorkersStartWithTheSaveSignalsBlockedOthersWithNone) {
  // SigBlk's bits: SIGHUP 1, SIGUSR1 10, SIGUSR2 12, SIGTERM 15, SIGXCPU 24 (0x804a01); a
  // unitrain worker's main holds them (StopSignalGuard::hold), another program must not find
  // them blocked.
  for (const bool hold : {true, false}) {
    Captured c;
    LaunchOptions o = sh("", c);
    o.command = {"grep", "SigBlk", "/proc/self/status"};  // sh would unblock every signal
    o.master_port = hold ? 29602 : 29603;
    o.workers_hold_signals = hold;
    EXPECT_EQ(launch(o), 0);
    EXPECT_TRUE(contains(c.all(), hold ? "0000000000804a01" : "0000000000000000")) << c.all();
  }
}

TEST(Launcher, OnTwoMachinesTheWorkersMeetInMachineZerosLauncherStore) {
  const TwoMachines m = launch_two(
      "echo \"rank $RANK of $WORLD_SIZE local $LOCAL_RANK/$LOCAL_WORLD_SIZE node $GROUP_RANK "
      "agent store $TORCHELASTIC_USE_AGENT_STORE restart $TORCHELASTIC_RESTART_COUNT\"");
  EXPECT_EQ(m.status[0], 0) << m.out[0];
  EXPECT_EQ(m.status[1], 0) << m.out[1];
  EXPECT_TRUE(
      contains(m.out[0], "[rank 1] rank 1 of 4 local 1/2 node 0 agent store True restart 0"))
      << m.out[0];
  EXPECT_TRUE(
      contains(m.out[1], "[rank 2] rank 2 of 4 local 0/2 node 1 agent store True restart 0"))
      << m.out[1];
}

TEST(Launcher, AFailureOnOneMachineRestartsEveryMachineTogether) {
  // Round 0: rank 2 (machine 1) fails; machine 0's workers would sleep on and leave a mark
  // when stopped. Round 1: every worker finds both marks (no round-1 worker started before
  // every round-0 worker had ended) and succeeds.
  const std::string marks = test::temp_dir();
  const std::string script =
      "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then "
      "  if [ $RANK = 2 ]; then sleep 0.3; exit 4; fi; "
      "  if [ $GROUP_RANK = 0 ]; then trap 'sleep 0.5; touch " +
      marks +
      "/$RANK; exit 1' TERM; fi; "
      "  sleep 60 & wait; exit 1; "
      "fi; "
      "[ -e " +
      marks + "/0 ] && [ -e " + marks + "/1 ] && echo done $RANK";
  const TwoMachines m = launch_two(script, 2, [](LaunchOptions& o) { o.max_restarts = 1; });
  EXPECT_EQ(m.status[0], 0) << m.out[0];
  EXPECT_EQ(m.status[1], 0) << m.out[1];
  EXPECT_TRUE(contains(m.out[0], "stopping this machine's workers")) << m.out[0];
  for (int node : {0, 1}) {
    EXPECT_TRUE(contains(m.out[node],
                         "restarting the workers (restart 1 of 1) after rank 2 on "
                         "machine 1 exited with status 4"))
        << m.out[node];
  }
  EXPECT_TRUE(contains(m.out[0], "[rank 1] done 1")) << m.out[0];
  EXPECT_TRUE(contains(m.out[1], "[rank 3] done 3")) << m.out[1];
}

TEST(Launcher, OnTwoMachinesAFailureWithNoRestartsLeftEndsBoth) {
  const TwoMachines m = launch_two("if [ $RANK = 1 ]; then exit 3; fi; sleep 60 & wait", 2,
                                   [](LaunchOptions& o) { o.max_restarts = 0; });
  // The failed worker's status on its machine, 1 on the other.
  EXPECT_EQ(m.status[0], 3) << m.out[0];
  EXPECT_EQ(m.status[1], 1) << m.out[1];
  for (int node : {0, 1}) {
    EXPECT_TRUE(contains(m.out[node], "failed: worker rank 1 on machine 0 exited with status 3"))
        << m.out[node];
  }
}

TEST(Launcher, MachinesStartedWithDifferentShapesAreRefused) {
  const TwoMachines m = launch_two("true", 2, [](LaunchOptions& o) {
    if (o.node_rank == 1) o.nproc_per_node = 3;
  });
  EXPECT_EQ(m.status[0], -2) << m.out[0];
  EXPECT_TRUE(contains(m.out[0], "machine 1's launcher runs 3 worker(s)")) << m.out[0];
}

TEST(Launcher, AFailedWorkerEndsTheOthersAndIsNamed) {
  Captured c;
  LaunchOptions o = sh("if [ $RANK = 1 ]; then exit 3; fi; exec sleep 60", c);
  int code = 0;
  const double took = seconds_of([&] { code = launch(o); });
  EXPECT_EQ(code, 3);     // the failed worker's own status
  EXPECT_LT(took, 30.0);  // rank 0 was ended, not waited for
  const std::string all = c.all();
  EXPECT_TRUE(contains(all, "worker rank 1")) << all;
  EXPECT_TRUE(contains(all, "exited with status 3")) << all;
}

TEST(Launcher, WorkersIgnoringSigtermAreKilledAfterTheGracePeriod) {
  Captured c;
  LaunchOptions o = sh(
      "if [ $RANK = 0 ]; then exit 5; fi; trap '' TERM; sleep 20 >/dev/null 2>&1 & wait; wait", c);
  o.grace_seconds = 0.5;
  int code = 0;
  const double took = seconds_of([&] { code = launch(o); });
  EXPECT_EQ(code, 5);
  EXPECT_LT(took, 30.0);
  EXPECT_TRUE(contains(c.all(), "worker rank 0")) << c.all();
}

TEST(Launcher, RestartsTheGroupUpToMaxRestarts) {
  // Fails on the first attempt only.
  const std::string script =
      "if [ $TORCHELASTIC_RESTART_COUNT = 0 ] && [ $RANK = 1 ]; then exit 4; fi; "
      "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then exec sleep 60; fi; echo done $RANK";
  Captured once;
  LaunchOptions o = sh(script, once);
  o.max_restarts = 1;
  o.log_dir = test::temp_dir() + "/logs";
  EXPECT_EQ(launch(o), 0) << once.all();
  EXPECT_TRUE(contains(once.all(),
                       "restarting the workers (restart 1 of 1) after rank 1 exited "
                       "with status 4"))
      << once.all();
  EXPECT_TRUE(contains(once.all(), "[rank 0] done 0")) << once.all();
  EXPECT_TRUE(contains(slurp(o.log_dir + "/rank-1.log"), "--- restart 1 ---"));

  Captured never;
  LaunchOptions no_restart = sh(script, never);
  EXPECT_EQ(launch(no_restart), 4);
  EXPECT_TRUE(contains(never.all(), "failed: worker rank 1 exited with status 4")) << never.all();
}

TEST(Launcher, AWorkerThatEndsOnBadInputIsNotRestarted) {
  // Exit status 2 is a config error: a restart would end the same way.
  Captured c;
  LaunchOptions o = sh("if [ $RANK = 1 ]; then exit 2; fi; exec sleep 60", c);
  o.max_restarts = 3;
  EXPECT_EQ(launch(o), 2) << c.all();
  EXPECT_FALSE(contains(c.all(), "restarting")) << c.all();
  EXPECT_TRUE(contains(c.all(),
                       "failed: worker rank 1 exited with status 2 (bad input, "
                       "e.g. the config: not restarted"))
      << c.all();
}

TEST(Launcher, WorkersThatSavedOnASignalAreNoFailureAndTheirStatusIsReturned) {
  // Each worker ends as a trainer does after checkpoint.on_signal: at once with the status.
  Captured c;
  LaunchOptions o = sh("exit 75", c);
  o.max_restarts = 2;
  EXPECT_EQ(launch(o), 75) << c.all();
  EXPECT_FALSE(contains(c.all(), "restarting")) << c.all();
  Captured other;
  LaunchOptions changed = sh("exit 99", other, 1);
  changed.resume_exit_code = 99;
  EXPECT_EQ(launch(changed), 99) << other.all();
}

TEST(Launcher, ForwardsTheSaveSignalsToTheWorkers) {
  // The workers trap SIGUSR1, say they are ready and exit 75 when it comes; the launcher gets
  // the signal from this test once both are ready.
  for (int sig : {SIGUSR1, SIGTERM}) {
    Captured c;
    const std::string name = sig == SIGUSR1 ? "USR1" : "TERM";
    LaunchOptions o =
        sh("trap 'echo got; exit 75' " + name + "; echo ready; while :; do sleep 0.05; done", c);
    std::thread signaller([&] {
      for (int i = 0; i < 400; ++i) {
        {
          std::lock_guard<std::mutex> lock(c.mu);
          if (std::count_if(c.out.begin(), c.out.end(),
                            [](const std::string& l) { return contains(l, "ready"); }) == 2) {
            break;
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
      }
      ::kill(::getpid(), sig);
    });
    const int code = launch(o);
    signaller.join();
    EXPECT_EQ(code, 75) << name << "\n" << c.all();
    EXPECT_EQ(std::count_if(c.out.begin(), c.out.end(),
                            [](const std::string& l) { return contains(l, "] got"); }),
              2)
        << c.all();
  }
}

TEST(Launcher, KilledWorkerIsDescribedBySignal) {
  Captured c;
  EXPECT_EQ(launch(sh("kill -9 $$", c, 1)), 128 + 9);  // as a shell reports it
  EXPECT_TRUE(contains(c.all(), "was killed by signal 9")) << c.all();
}

TEST(Launcher, AProgramThatCannotRunIsAFailure) {
  Captured c;
  LaunchOptions o = sh("", c, 1);
  o.command = {"/no/such/program"};
  EXPECT_EQ(launch(o), 127);
  EXPECT_TRUE(contains(c.all(), "/no/such/program")) << c.all();
  EXPECT_TRUE(contains(c.all(), "exited with status 127")) << c.all();
}

TEST(Launcher, BadOptionsAreConfigErrors) {
  Captured c;
  auto error = [&](const std::function<void(LaunchOptions&)>& change) {
    LaunchOptions o = sh("true", c);
    change(o);
    return test::error_of<ConfigError>([&] { launch(o); });
  };
  EXPECT_TRUE(contains(error([](LaunchOptions& o) { o.nproc_per_node = 0; }), "--nproc-per-node"));
  EXPECT_TRUE(contains(error([](LaunchOptions& o) { o.node_rank = 2; }), "--node-rank 2"));
  EXPECT_TRUE(contains(error([](LaunchOptions& o) { o.master_port = 70000; }), "--master-port"));
  EXPECT_TRUE(contains(error([](LaunchOptions& o) { o.command.clear(); }), "after --"));
  EXPECT_TRUE(
      contains(error([](LaunchOptions& o) { o.resume_exit_code = 0; }), "--resume-exit-code"));
}

TEST(Launcher, DescribeExit) {
  EXPECT_EQ(describe_exit(0), "exited with status 0");
  EXPECT_EQ(describe_exit(2 << 8), "exited with status 2");
  EXPECT_TRUE(contains(describe_exit(SIGKILL), "killed by signal 9"));
}

}  // namespace
}  // namespace unitrain
