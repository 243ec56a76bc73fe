#include "unitrain/checkpoint/checkpointer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

using test::contains;
using test::error_of;

namespace fs = std::filesystem;

std::vector<char> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string text_of(const std::vector<char>& b) { return {b.begin(), b.end()}; }

CheckpointSave save_of(int64_t step, bool best = false) {
  return {step, {{"model.pt", bytes_of("step " + std::to_string(step))}}, best};
}

CheckpointOptions options(bool async, int64_t keep_last = 0) {
  CheckpointOptions o;
  o.async = async;
  o.keep_last = keep_last;
  return o;
}

std::vector<int64_t> steps(const Checkpointer& c) {
  std::vector<int64_t> s;
  for (const auto& ref : c.store().list()) s.push_back(ref.step);
  return s;
}

std::string name_of(const std::string& dir) { return fs::path(dir).filename().string(); }

void corrupt(const std::string& path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.put('X');  // same size: only the CRC-32 tells
}

TEST(Checkpointer, SyncSaveIsCompleteOnReturnAndLinksLast) {
  const std::string root = test::temp_dir() + "/ckpt";
  Checkpointer c(options(false), root);
  c.save(save_of(10));
  EXPECT_EQ(CheckpointStore::verify(root + "/step-10"), "");
  EXPECT_EQ(c.store().resolve_link("last"), root + "/step-10");
  EXPECT_EQ(c.store().resolve_link("best"), "");
  c.save(save_of(20));
  EXPECT_EQ(c.store().resolve_link("last"), root + "/step-20");
  EXPECT_EQ(text_of(CheckpointStore::read(root + "/step-20", "model.pt")), "step 20");
  EXPECT_EQ(c.saves(), 2);
  EXPECT_GT(c.write_seconds(), 0);
  EXPECT_GE(c.blocking_seconds(), c.write_seconds());  // a sync save blocks for the write
}

TEST(Checkpointer, AsyncSaveIsCompleteAfterWaitAndLinksLastAndBest) {
  const std::string root = test::temp_dir() + "/ckpt";
  Checkpointer c(options(true), root);
  c.save(save_of(10, /*best=*/true));
  c.save(save_of(20));
  c.save(save_of(30));
  c.wait();
  EXPECT_EQ(steps(c), (std::vector<int64_t>{10, 20, 30}));
  for (int64_t s : {10, 20, 30}) {
    const std::string dir = root + "/step-" + std::to_string(s);
    EXPECT_EQ(CheckpointStore::verify(dir), "") << dir;
    EXPECT_EQ(text_of(CheckpointStore::read(dir, "model.pt")), "step " + std::to_string(s));
  }
  EXPECT_EQ(c.store().resolve_link("last"), root + "/step-30");
  EXPECT_EQ(c.store().resolve_link("best"), root + "/step-10");
  EXPECT_EQ(c.saves(), 3);
  EXPECT_GT(c.write_seconds(), 0);
  c.wait();  // a second wait with nothing pending is fine
}

TEST(Checkpointer, BestLinkFollowsTheLastBestSave) {
  for (bool async : {false, true}) {
    const std::string root = test::temp_dir() + "/ckpt";
    Checkpointer c(options(async), root);
    c.save(save_of(1, true));
    c.save(save_of(2));
    c.save(save_of(3, true));
    c.save(save_of(4));
    c.wait();
    EXPECT_EQ(name_of(c.store().resolve_link("best")), "step-3") << async;
    EXPECT_EQ(name_of(c.store().resolve_link("last")), "step-4") << async;
  }
}

TEST(Checkpointer, ProducedFilesAreSerialisedAtWriteTime) {
  for (bool async : {false, true}) {
    const std::string root = test::temp_dir() + "/ckpt";
    Checkpointer c(options(async), root);
    auto calls = std::make_shared<std::atomic<int>>(0);
    CheckpointSave s = save_of(5);
    s.files.push_back({"optimizer.pt", {}, [calls] {
                         ++*calls;
                         return bytes_of("serialised later");
                       }});
    s.files.push_back({"rng.pt", {}, [] { return bytes_of(std::string(1000, 'r')); }});
    c.save(std::move(s));
    c.wait();
    EXPECT_EQ(calls->load(), 1) << async;
    const std::string dir = root + "/step-5";
    EXPECT_EQ(CheckpointStore::verify(dir), "") << async;  // the CRCs computed while serialising
    EXPECT_EQ(text_of(CheckpointStore::read(dir, "optimizer.pt")), "serialised later");
    EXPECT_EQ(CheckpointStore::read(dir, "rng.pt").size(), 1000u);
    EXPECT_EQ(text_of(CheckpointStore::read(dir, "model.pt")), "step 5");
  }
}

TEST(Checkpointer, SnapshotRunsBeforeFilesAndWaitSnapshotWaitsForIt) {
  for (bool async : {false, true}) {
    const std::string root = test::temp_dir() + "/ckpt";
    Checkpointer c(options(async), root);
    auto copied = std::make_shared<std::atomic<bool>>(false);
    auto release = std::make_shared<std::atomic<bool>>(false);
    CheckpointSave s = save_of(3);
    s.snapshot = [copied, release, async] {
      // Async: the snapshot runs on the writer thread, so it may wait for the test to let it go.
      while (async && !*release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      *copied = true;
    };
    s.files.push_back({"state.pt", {}, [copied] {
                         return bytes_of(*copied ? "after the snapshot" : "before the snapshot");
                       }});
    c.save(std::move(s));
    EXPECT_EQ(copied->load(), !async);  // async: save() did not wait for the copies
    *release = true;
    c.wait_snapshot();
    EXPECT_TRUE(copied->load()) << async;
    c.wait();
    EXPECT_EQ(text_of(CheckpointStore::read(root + "/step-3", "state.pt")), "after the snapshot");
    c.wait_snapshot();  // nothing pending: returns at once
  }
}

TEST(Checkpointer, FailedSnapshotReleasesTheFenceAndSurfacesAtWait) {
  const std::string root = test::temp_dir() + "/ckpt";
  Checkpointer c(options(true), root);
  CheckpointSave s = save_of(4);
  s.snapshot = [] { throw std::runtime_error("copy failed"); };
  c.save(std::move(s));
  c.wait_snapshot();  // must not hang
  const std::string m = error_of<TrainError>([&] { c.wait(); });
  EXPECT_TRUE(contains(m, "step-4")) << m;
  EXPECT_TRUE(contains(m, "copy failed")) << m;
  EXPECT_TRUE(steps(c).empty());
}

TEST(Checkpointer, KeepLastPrunesButKeepsBest) {
  for (bool async : {false, true}) {
    const std::string root = test::temp_dir() + "/ckpt";
    Checkpointer c(options(async, 2), root);
    c.save(save_of(1, true));
    for (int s = 2; s <= 5; ++s) c.save(save_of(s));
    c.wait();
    EXPECT_EQ(steps(c), (std::vector<int64_t>{1, 4, 5})) << async;
    EXPECT_FALSE(fs::exists(root + "/step-2"));
    EXPECT_FALSE(fs::exists(root + "/step-3"));
  }
  const std::string root = test::temp_dir() + "/ckpt";
  Checkpointer all(options(false, 0), root);  // 0 keeps all
  for (int s = 1; s <= 5; ++s) all.save(save_of(s));
  EXPECT_EQ(steps(all), (std::vector<int64_t>{1, 2, 3, 4, 5}));
}

TEST(Checkpointer, SyncSaveFailureIsATrainErrorNamingTheRoot) {
  const std::string tmp = test::temp_dir();
  const std::string root = test::write_file(tmp + "/ckpt", "a regular file");
  Checkpointer c(options(false), root);
  const std::string m = error_of<TrainError>([&] { c.save(save_of(1)); });
  EXPECT_TRUE(contains(m, root)) << m;
}

TEST(Checkpointer, FailedBackgroundSaveSurfacesAtWaitNamingTheStep) {
  const std::string root = test::temp_dir() + "/ckpt";
  Checkpointer c(options(true), root);
  c.save(save_of(1));
  c.wait();
  fs::rename(root, root + "-moved");
  test::write_file(root, "not a folder");
  c.save(save_of(2));  // returns at once; the write fails in the background
  const std::string m = error_of<TrainError>([&] { c.wait(); });
  EXPECT_TRUE(contains(m, "step-2")) << m;
  EXPECT_TRUE(contains(m, root)) << m;  // the underlying cause is kept
  EXPECT_TRUE(contains(m, "older checkpoints are intact")) << m;
  EXPECT_EQ(test::message_of([&] { c.wait(); }), "");  // reported once
  EXPECT_EQ(CheckpointStore::verify(root + "-moved/step-1"), "");

  // Once the folder is back, saving works again.
  fs::remove(root);
  fs::rename(root + "-moved", root);
  c.save(save_of(3));
  c.wait();
  EXPECT_EQ(steps(c), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(name_of(c.store().resolve_link("last")), "step-3");
}

TEST(Checkpointer, FailedBackgroundSaveSurfacesAtTheNextSave) {
  const std::string root = test::temp_dir() + "/ckpt";
  Checkpointer c(options(true), root);
  c.save(save_of(1));
  c.wait();
  CheckpointSave failing = save_of(2);
  failing.files.push_back({"optimizer.pt", {}, []() -> std::vector<char> {
                             throw std::runtime_error("serialising the optimizer failed");
                           }});
  c.save(std::move(failing));
  const std::string m = error_of<TrainError>([&] { c.save(save_of(3)); });
  EXPECT_TRUE(contains(m, "step-2")) << m;
  EXPECT_TRUE(contains(m, "serialising the optimizer failed")) << m;
  EXPECT_FALSE(fs::exists(root + "/step-2"));
  EXPECT_EQ(name_of(c.store().resolve_link("last")), "step-1");
  // The save that reported the failure did not write; the next one does.
  EXPECT_FALSE(fs::exists(root + "/step-3"));
  c.save(save_of(4));
  c.wait();
  EXPECT_EQ(steps(c), (std::vector<int64_t>{1, 4}));
}

TEST(Checkpointer, DestructorWaitsForAPendingSaveAndDoesNotThrow) {
  const std::string root = test::temp_dir() + "/ckpt";
  EXPECT_NO_THROW({
    Checkpointer c(options(true), root);
    c.save(save_of(1));
  });
  EXPECT_EQ(CheckpointStore::verify(root + "/step-1"), "");

  const std::string broken = test::write_file(test::temp_dir() + "/ckpt", "a file");
  EXPECT_NO_THROW({
    Checkpointer c(options(true), broken);
    c.save(save_of(1));  // fails in the background; the destructor logs it
  });
}

TEST(Checkpointer, CleanPartialRemovesInterruptedSaves) {
  const std::string root = test::temp_dir() + "/ckpt";
  Checkpointer c(options(false), root);
  c.save(save_of(1));
  test::write_file(root + "/.partial-step-2-12345/model.pt", "half");
  c.clean_partial();
  EXPECT_FALSE(fs::exists(root + "/.partial-step-2-12345"));
  EXPECT_EQ(CheckpointStore::verify(root + "/step-1"), "");
}

TEST(Checkpointer, FindResumeNoneAutoLastBestAndPath) {
  const std::string root = test::temp_dir() + "/ckpt";
  Checkpointer c(options(false), root);
  EXPECT_EQ(c.find_resume("auto"), "");  // no folder yet: a fresh start
  fs::create_directories(root);
  EXPECT_EQ(c.find_resume("auto"), "");  // empty folder
  c.save(save_of(1));
  c.save(save_of(2, true));
  c.save(save_of(3));
  EXPECT_EQ(c.find_resume("none"), "");
  EXPECT_EQ(c.find_resume("auto"), root + "/step-3");
  EXPECT_EQ(c.find_resume("last"), root + "/step-3");
  EXPECT_EQ(c.find_resume("best"), root + "/step-2");
  EXPECT_EQ(c.find_resume(root + "/step-1"), root + "/step-1");
}

TEST(Checkpointer, FindResumeAutoSkipsInvalidCheckpoints) {
  const std::string root = test::temp_dir() + "/ckpt";
  Checkpointer c(options(false), root);
  for (int s = 1; s <= 4; ++s) c.save(save_of(s));
  corrupt(root + "/step-4/model.pt");
  EXPECT_EQ(c.find_resume("auto"), root + "/step-3");
  fs::remove(root + "/step-3/model.pt");  // missing: not even listed
  EXPECT_EQ(c.find_resume("auto"), root + "/step-2");
  fs::remove(root + "/step-2/MANIFEST.json");  // never completed
  EXPECT_EQ(c.find_resume("auto"), root + "/step-1");
  corrupt(root + "/step-1/model.pt");
  EXPECT_EQ(c.find_resume("auto"), "");  // nothing valid: a fresh start
}

TEST(Checkpointer, FindResumeExplicitChoiceThatIsInvalidIsAConfigErrorNamingTheFile) {
  const std::string root = test::temp_dir() + "/ckpt";
  Checkpointer c(options(false), root);
  c.save(save_of(1));
  c.save(save_of(2, true));
  c.save(save_of(3));
  corrupt(root + "/step-3/model.pt");
  corrupt(root + "/step-2/model.pt");
  for (const std::string& choice : {std::string("last"), root + "/step-3"}) {
    const std::string m = error_of<ConfigError>([&] { c.find_resume(choice); });
    EXPECT_TRUE(contains(m, root + "/step-3/model.pt")) << m;
    EXPECT_TRUE(contains(m, "checkpoint.resume")) << m;
  }
  std::string m = error_of<ConfigError>([&] { c.find_resume("best"); });
  EXPECT_TRUE(contains(m, root + "/step-2/model.pt")) << m;

  fs::remove(root + "/step-1/model.pt");
  m = error_of<ConfigError>([&] { c.find_resume(root + "/step-1"); });
  EXPECT_TRUE(contains(m, root + "/step-1/model.pt")) << m;
  m = error_of<ConfigError>([&] { c.find_resume(root + "/step-9"); });
  EXPECT_TRUE(contains(m, root + "/step-9")) << m;

  fs::remove_all(root + "/step-3");  // `last` now dangles
  m = error_of<ConfigError>([&] { c.find_resume("last"); });
  EXPECT_TRUE(contains(m, "'last'")) << m;
  EXPECT_TRUE(contains(m, root)) << m;

  Checkpointer no_best(options(false), test::temp_dir() + "/other");
  no_best.save(save_of(1));
  m = error_of<ConfigError>([&] { no_best.find_resume("best"); });
  EXPECT_TRUE(contains(m, "'best'")) << m;
  EXPECT_TRUE(contains(m, "checkpoint.best.metric")) << m;
}

}  // namespace
}  // namespace unitrain
