#include "unitrain/engine/setup/run_dir_lock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace unitrain {
namespace {

using test::contains;

nlohmann::json lock_file_of(const std::string& run_dir) {
  std::ifstream in(RunDirLock::path_of(run_dir));
  return nlohmann::json::parse(in);
}

TEST(RunDirLock, ASecondHolderIsRefusedNamingTheFirst) {
  const std::string run_dir = test::temp_dir() + "/runs/x";  // created by acquire
  auto lock = RunDirLock::acquire(run_dir);
  ASSERT_TRUE(std::filesystem::is_directory(run_dir));
  const nlohmann::json held = lock_file_of(run_dir);
  EXPECT_EQ(held["pid"].get<long>(), long(::getpid()));
  EXPECT_FALSE(held["host"].get<std::string>().empty());
  EXPECT_EQ(held["since"].get<std::string>().size(), 20u);  // 2026-11-25T14:02:11Z

  // Another lock of this process counts as another run (two Trainers on one folder).
  const std::string m = test::error_of<ConfigError>([&] { RunDirLock::acquire(run_dir); });
  EXPECT_TRUE(contains(m, "run folder " + run_dir + " is in use by pid " +
                              std::to_string(::getpid()) + " on host " +
                              held["host"].get<std::string>() + " since " +
                              held["since"].get<std::string>() + " (this process)"))
      << m;
  EXPECT_TRUE(contains(m, "; start another run with --name <new-name>, or stop that run")) << m;
  const std::string other =
      test::error_of<ConfigError>([&] { RunDirLock::acquire(run_dir, "--run_dir <new-folder>"); });
  EXPECT_TRUE(contains(other, "; start another run with --run_dir <new-folder>, or stop that run"))
      << other;

  lock.reset();  // released: the next run takes it, and the file says who now holds it
  auto again = RunDirLock::acquire(run_dir);
  EXPECT_EQ(lock_file_of(run_dir)["pid"].get<long>(), long(::getpid()));
}

TEST(RunDirLock, AKilledHolderLeavesNoStaleLock) {
  const std::string run_dir = test::temp_dir() + "/run";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto lock = RunDirLock::acquire(run_dir);
    const char c = 'y';
    if (::write(ready[1], &c, 1) != 1) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  const std::string m = test::error_of<ConfigError>([&] { RunDirLock::acquire(run_dir); });
  EXPECT_TRUE(contains(m, "in use by pid " + std::to_string(child) + " on host ")) << m;
  EXPECT_FALSE(contains(m, "this process")) << m;

  ::kill(child, SIGKILL);  // no destructor runs: the kernel drops the lock
  ::waitpid(child, nullptr, 0);
  auto lock = RunDirLock::acquire(run_dir);
  EXPECT_EQ(lock_file_of(run_dir)["pid"].get<long>(), long(::getpid()));
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(RunDirLock, AnUnusableFolderIsAConfigErrorNamingIt) {
  const std::string file = test::write_file(test::temp_dir() + "/plain-file", "x");
  const std::string m = test::error_of<ConfigError>([&] { RunDirLock::acquire(file + "/run"); });
  EXPECT_TRUE(contains(m, "cannot create run_dir '" + file + "/run'")) << m;
}

TEST(RunDirLock, UndoingRemovesOnlyWhatItCreatedWhileItHoldsNothingElse) {
  namespace fs = std::filesystem;
  const std::string root = test::temp_dir();
  auto fresh = RunDirLock::acquire(root + "/runs/a/");  // runs/ and a/ are new
  EXPECT_TRUE(fresh->undo_creation());
  EXPECT_FALSE(fs::exists(root + "/runs"));
  EXPECT_TRUE(fs::exists(root));

  fs::create_directories(root + "/runs");  // runs/ was there: it stays
  auto in_runs = RunDirLock::acquire(root + "/runs/b");
  EXPECT_TRUE(in_runs->undo_creation());
  EXPECT_FALSE(fs::exists(root + "/runs/b"));
  EXPECT_TRUE(fs::exists(root + "/runs"));

  auto written = RunDirLock::acquire(root + "/runs/c");  // the run wrote a file: nothing goes
  test::write_file(root + "/runs/c/config.yaml", "x");
  EXPECT_FALSE(written->undo_creation());
  EXPECT_TRUE(fs::exists(root + "/runs/c/.lock"));

  fs::create_directories(root + "/old");  // a folder that was there is never removed
  auto existing = RunDirLock::acquire(root + "/old");
  EXPECT_FALSE(existing->undo_creation());
  EXPECT_TRUE(fs::exists(root + "/old/.lock"));
}

TEST(RunDirLock, TheLockIsNotInheritedByProgramsTheRunStarts) {
  const std::string run_dir = test::temp_dir() + "/run";
  auto lock = RunDirLock::acquire(run_dir);
  // A program started with fork + exec (what a callback or a launcher would do) must not keep
  // the lock alive after this process ends: the descriptor is closed on exec.
  bool found = false;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(e.path(), ec);
    if (ec || target.string() != std::filesystem::absolute(RunDirLock::path_of(run_dir)).string()) {
      continue;
    }
    found = true;
    const int fd = std::stoi(e.path().filename().string());
    EXPECT_TRUE(::fcntl(fd, F_GETFD) & FD_CLOEXEC);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace unitrain
