#include "unitrain/launch/launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
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

TEST(Launcher, WorkersGetTorchrunVariablesAndPrefixedLoggedOutput) {
  Captured c;
  LaunchOptions o = sh(
      "echo \"rank $RANK of $WORLD_SIZE local $LOCAL_RANK/$LOCAL_WORLD_SIZE node $GROUP_RANK "
      "at $MASTER_ADDR:$MASTER_PORT restart $TORCHELASTIC_RESTART_COUNT\"; echo oops >&2",
      c);
  o.nnodes = 2;
  o.node_rank = 1;
  o.master_addr = "10.1.2.3";
  o.master_port = 29601;
  o.log_dir = test::temp_dir() + "/logs";
  EXPECT_EQ(launch(o), 0);
  const std::string all = c.all();
  EXPECT_TRUE(contains(all, "[rank 2] rank 2 of 4 local 0/2 node 1 at 10.1.2.3:29601 restart 0"))
      << all;
  EXPECT_TRUE(contains(all, "[rank 3] rank 3 of 4 local 1/2 node 1")) << all;
  ASSERT_EQ(c.err.size(), 2u) << all;
  EXPECT_TRUE(contains(c.err[0], "] oops")) << all;
  const std::string log2 = slurp(o.log_dir + "/rank-2.log");
  EXPECT_TRUE(contains(log2, "rank 2 of 4")) << log2;
  EXPECT_TRUE(contains(log2, "oops")) << log2;
  EXPECT_TRUE(contains(slurp(o.log_dir + "/rank-3.log"), "rank 3 of 4"));
}

TEST(Launcher, AFailedWorkerEndsTheOthersAndIsNamed) {
  Captured c;
  LaunchOptions o = sh("if [ $RANK = 1 ]; then exit 3; fi; exec sleep 60", c);
  int code = 0;
  const double took = seconds_of([&] { code = launch(o); });
  EXPECT_EQ(code, 1);
  EXPECT_LT(took, 30.0);  // rank 0 was ended, not waited for
  const std::string all = c.all();
  EXPECT_TRUE(contains(all, "worker rank 1")) << all;
  EXPECT_TRUE(contains(all, "exited with status 3")) << all;
}

TEST(Launcher, WorkersIgnoringSigtermAreKilledAfterTheGracePeriod) {
  Captured c;
  LaunchOptions o = sh("if [ $RANK = 0 ]; then exit 5; fi; trap '' TERM; sleep 20 >/dev/null 2>&1 & wait; wait", c);
  o.grace_seconds = 0.5;
  int code = 0;
  const double took = seconds_of([&] { code = launch(o); });
  EXPECT_EQ(code, 1);
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
  EXPECT_TRUE(contains(once.all(), "restarting the workers (restart 1 of 1) after rank 1 exited "
                                   "with status 4"))
      << once.all();
  EXPECT_TRUE(contains(once.all(), "[rank 0] done 0")) << once.all();
  EXPECT_TRUE(contains(slurp(o.log_dir + "/rank-1.log"), "--- restart 1 ---"));

  Captured never;
  LaunchOptions no_restart = sh(script, never);
  EXPECT_EQ(launch(no_restart), 1);
  EXPECT_TRUE(contains(never.all(), "failed: worker rank 1 exited with status 4")) << never.all();
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
  EXPECT_EQ(launch(sh("kill -9 $$", c, 1)), 1);
  EXPECT_TRUE(contains(c.all(), "was killed by signal 9")) << c.all();
}

TEST(Launcher, AProgramThatCannotRunIsAFailure) {
  Captured c;
  LaunchOptions o = sh("", c, 1);
  o.command = {"/no/such/program"};
  EXPECT_EQ(launch(o), 1);
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
