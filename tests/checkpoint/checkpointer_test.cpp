#include "unitrain/checkpoint/checkpointer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

CheckpointSave save_of(int64_t step, bool best = false) {
  const std::string text = "step " + std::to_string(step);
  return {step, {{"model.pt", {text.begin(), text.end()}}}, best};
}

CheckpointOptions options(bool async, int64_t keep_last = 0) {
  CheckpointOptions o;
  o.async = async;
  o.keep_last = keep_last;
  return o;
}

TEST(Checkpointer, SyncAndAsyncSavesLinkLastAndBest) {
  for (bool async : {false, true}) {
    const std::string root = test::temp_dir() + "/ckpt";
    Checkpointer c(options(async), root);
    c.save(save_of(10, /*best=*/true));
    c.save(save_of(20));
    c.wait();
    EXPECT_EQ(fs::path(c.store().resolve_link("last")).filename(), "step-20") << async;
    EXPECT_EQ(fs::path(c.store().resolve_link("best")).filename(), "step-10") << async;
    EXPECT_EQ(CheckpointStore::verify(root + "/step-10"), "");
    EXPECT_GT(c.write_seconds(), 0);
  }
}

TEST(Checkpointer, KeepLastPrunesAfterTheNewOneIsComplete) {
  const std::string root = test::temp_dir() + "/ckpt";
  Checkpointer c(options(false, 2), root);
  c.save(save_of(1, true));
  for (int s = 2; s <= 5; ++s) c.save(save_of(s));
  std::vector<int64_t> steps;
  for (const auto& ref : c.store().list()) steps.push_back(ref.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 4, 5}));  // the best one is kept too
}

TEST(Checkpointer, AFailedBackgroundSaveIsReportedNotLost) {
  const std::string root = test::temp_dir() + "/ckpt";
  Checkpointer c(options(true), root);
  c.save(save_of(1));
  c.wait();
  fs::rename(root, root + "-moved");
  test::write_file(root, "not a folder");
  c.save(save_of(2));  // returns at once; the write fails in the background
  const std::string m = test::message_of([&] { c.wait(); });
  EXPECT_NE(m.find("step-2"), std::string::npos) << m;
  EXPECT_NE(m.find("older checkpoints are intact"), std::string::npos) << m;
  EXPECT_EQ(test::message_of([&] { c.wait(); }), "");  // reported once

  // The failure also surfaces at the next save, which then proceeds.
  c.save(save_of(3));
  EXPECT_THROW(c.save(save_of(4)), TrainError);
}

TEST(Checkpointer, FindResume) {
  const std::string root = test::temp_dir() + "/ckpt";
  Checkpointer c(options(false), root);
  EXPECT_EQ(c.find_resume("auto"), "");  // nothing saved yet: a fresh start
  c.save(save_of(1));
  c.save(save_of(2, true));
  c.save(save_of(3));
  EXPECT_EQ(c.find_resume("none"), "");
  EXPECT_EQ(fs::path(c.find_resume("auto")).filename(), "step-3");
  EXPECT_EQ(fs::path(c.find_resume("last")).filename(), "step-3");
  EXPECT_EQ(fs::path(c.find_resume("best")).filename(), "step-2");
  EXPECT_EQ(fs::path(c.find_resume(root + "/step-1")).filename(), "step-1");

  {  // corrupt the newest: auto falls back, explicit choices name the file
    std::fstream f(root + "/step-3/model.pt", std::ios::in | std::ios::out | std::ios::binary);
    f.put('X');
  }
  EXPECT_EQ(fs::path(c.find_resume("auto")).filename(), "step-2");
  for (const std::string& choice : {std::string("last"), root + "/step-3"}) {
    EXPECT_THROW(c.find_resume(choice), ConfigError);
    EXPECT_NE(test::message_of([&] { c.find_resume(choice); }).find("step-3/model.pt"), std::string::npos);
  }
  EXPECT_NE(test::message_of([&] { c.find_resume(root + "/step-9"); }).find("step-9"), std::string::npos);
  Checkpointer no_best(options(false), test::temp_dir() + "/other");
  EXPECT_THROW(no_best.find_resume("best"), ConfigError);
}

}  // namespace
}  // namespace unitrain
