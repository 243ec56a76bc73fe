#include "unitrain/checkpoint/checkpoint_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

std::vector<char> bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::vector<CheckpointFile> files(const std::string& tag) {
  return {{"model.pt", bytes("weights-" + tag)}, {"state.json", bytes("{\"tag\": \"" + tag + "\"}")}};
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void flip_byte(const std::string& path, size_t at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(at));
  f.put(static_cast<char>(c ^ 0x5a));
}

std::vector<int64_t> steps(const CheckpointStore& store) {
  std::vector<int64_t> s;
  for (const auto& ref : store.list()) s.push_back(ref.step);
  return s;
}

TEST(CheckpointStore, SaveListReadRoundTrip) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  const std::string dir = store.save(12, files("a"));
  EXPECT_EQ(fs::path(dir).filename(), "step-12");
  EXPECT_EQ(steps(store), std::vector<int64_t>{12});
  EXPECT_EQ(CheckpointStore::verify(dir), "");
  const auto model = CheckpointStore::read(dir, "model.pt");
  EXPECT_EQ(std::string(model.begin(), model.end()), "weights-a");
  EXPECT_TRUE(CheckpointStore::has(dir, "state.json"));
  EXPECT_FALSE(CheckpointStore::has(dir, "grads.pt"));
  const std::string manifest = slurp(dir + "/MANIFEST.json");
  EXPECT_NE(manifest.find("\"model.pt\""), std::string::npos);
  EXPECT_NE(manifest.find(std::to_string(crc32_of("weights-a", 9))), std::string::npos);
  EXPECT_EQ(CheckpointStore::step_of(dir), 12);
  EXPECT_EQ(CheckpointStore::step_of("/x/step-abc"), -1);
  EXPECT_EQ(CheckpointStore::step_of("/x/other"), -1);
}

TEST(CheckpointStore, Crc32IsZlibs) {
  EXPECT_EQ(crc32_of("123456789", 9), 0xCBF43926u);  // the standard CRC-32 check value
}

TEST(CheckpointStore, CorruptTruncatedAndMissingFilesAreNamed) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  const std::string a = store.save(1, files("one"));
  const std::string b = store.save(2, files("two"));
  const std::string c = store.save(3, files("three"));

  flip_byte(a + "/model.pt", 2);
  EXPECT_NE(CheckpointStore::verify(a).find("model.pt"), std::string::npos);
  try {
    CheckpointStore::read(a, "model.pt");
    FAIL() << "expected a TrainError";
  } catch (const TrainError& e) {
    EXPECT_NE(std::string(e.what()).find(a + "/model.pt"), std::string::npos) << e.what();
  }
  // Same size, so list() (sizes only) still counts it; verify and read catch it.
  EXPECT_EQ(steps(store), (std::vector<int64_t>{1, 2, 3}));

  fs::resize_file(b + "/state.json", 3);
  EXPECT_NE(CheckpointStore::verify(b).find("state.json"), std::string::npos);
  fs::remove(c + "/model.pt");
  EXPECT_NE(CheckpointStore::verify(c).find("model.pt"), std::string::npos);
  EXPECT_EQ(steps(store), (std::vector<int64_t>{1}));
}

TEST(CheckpointStore, FolderWithoutManifestIsNotACheckpoint) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  store.save(5, files("a"));
  const std::string dir = store.save(6, files("b"));
  fs::remove(dir + "/MANIFEST.json");
  EXPECT_EQ(steps(store), std::vector<int64_t>{5});
  EXPECT_NE(CheckpointStore::verify(dir).find("MANIFEST.json"), std::string::npos);
}

TEST(CheckpointStore, SavingTheSameStepReplacesIt) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  store.save(4, files("old"));
  const std::string dir = store.save(4, files("new"));
  const auto model = CheckpointStore::read(dir, "model.pt");
  EXPECT_EQ(std::string(model.begin(), model.end()), "weights-new");
  EXPECT_EQ(steps(store), std::vector<int64_t>{4});
  EXPECT_EQ(std::distance(fs::directory_iterator(store.root()), fs::directory_iterator()), 1);
}

TEST(CheckpointStore, PruneKeepsNewestBestAndLinkTargets) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  std::vector<std::string> dirs;
  for (int s = 1; s <= 6; ++s) dirs.push_back(store.save(s * 10, files(std::to_string(s))));
  store.link("best", dirs[1]);  // step 20
  store.prune(2, dirs[1]);
  EXPECT_EQ(steps(store), (std::vector<int64_t>{20, 50, 60}));
  store.prune(0, "");  // 0 keeps everything
  EXPECT_EQ(steps(store), (std::vector<int64_t>{20, 50, 60}));
  store.prune(1, "");  // the best link's target survives even when not passed
  EXPECT_EQ(steps(store), (std::vector<int64_t>{20, 60}));
}

TEST(CheckpointStore, LinksReplaceAndDanglingResolvesEmpty) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  const std::string a = store.save(1, files("a"));
  const std::string b = store.save(2, files("b"));
  EXPECT_EQ(store.resolve_link("last"), "");
  store.link("last", a);
  EXPECT_EQ(fs::canonical(store.resolve_link("last")), fs::canonical(a));
  store.link("last", b);
  EXPECT_EQ(fs::canonical(store.resolve_link("last")), fs::canonical(b));
  EXPECT_TRUE(fs::is_symlink(store.root() + "/last"));
  fs::remove_all(b);
  EXPECT_EQ(store.resolve_link("last"), "");
}

TEST(CheckpointStore, RemovePartialRemovesOnlyPartialFolders) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  store.save(1, files("a"));
  fs::create_directories(store.root() + "/.partial-step-2-999");
  test::write_file(store.root() + "/.partial-step-2-999/model.pt", "half");
  fs::create_directories(store.root() + "/.partial-step-3-998");
  EXPECT_EQ(store.remove_partial(), 2);
  EXPECT_FALSE(fs::exists(store.root() + "/.partial-step-2-999"));
  EXPECT_EQ(steps(store), std::vector<int64_t>{1});
  EXPECT_EQ(store.remove_partial(), 0);
}

TEST(CheckpointStore, UnwritableRootIsATrainErrorAndOlderCheckpointsStay) {
  const std::string root = test::temp_dir() + "/ckpt";
  CheckpointStore store(root);
  const std::string a = store.save(1, files("a"));
  // A regular file where the new step folder's parent should be.
  CheckpointStore blocked(test::write_file(test::temp_dir() + "/a-file", "x"));
  try {
    blocked.save(2, files("b"));
    FAIL() << "expected a TrainError";
  } catch (const TrainError& e) {
    EXPECT_NE(std::string(e.what()).find("a-file"), std::string::npos) << e.what();
  }
  EXPECT_EQ(CheckpointStore::verify(a), "");
}

}  // namespace
}  // namespace unitrain
