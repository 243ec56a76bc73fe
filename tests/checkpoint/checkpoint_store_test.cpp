#include "unitrain/checkpoint/checkpoint_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

using test::contains;
using test::error_of;

namespace fs = std::filesystem;

std::vector<char> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<char>& b) { return {b.begin(), b.end()}; }

std::vector<CheckpointFile> files(const std::string& tag) {
  return {{"model.pt", bytes("weights-" + tag)},
          {"state.json", bytes("{\"tag\": \"" + tag + "\"}")}};
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

/// Names in `dir`, sorted.
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CheckpointStore, SaveListVerifyReadRoundTrip) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  const std::string dir = store.save(12, files("a"));
  EXPECT_EQ(dir, store.root() + "/step-12");
  ASSERT_EQ(store.list().size(), 1u);
  EXPECT_EQ(store.list()[0].dir, dir);
  EXPECT_EQ(store.list()[0].step, 12);
  EXPECT_EQ(CheckpointStore::verify(dir), "");
  EXPECT_EQ(text(CheckpointStore::read(dir, "model.pt")), "weights-a");
  EXPECT_EQ(text(CheckpointStore::read(dir, "state.json")), "{\"tag\": \"a\"}");
  EXPECT_TRUE(CheckpointStore::has(dir, "state.json"));
  EXPECT_FALSE(CheckpointStore::has(dir, "grads.pt"));
  EXPECT_TRUE(
      contains(error_of<TrainError>([&] { CheckpointStore::read(dir, "grads.pt"); }), "grads.pt"));
  // Only the step folder is left: no .partial-* folder.
  EXPECT_EQ(entries(store.root()), std::vector<std::string>{"step-12"});
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"MANIFEST.json", "model.pt", "state.json"}));
}

TEST(CheckpointStore, ManifestListsSizesAndCrcs) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  const std::string dir = store.save(7, files("abc"));
  const auto m = nlohmann::json::parse(slurp(dir + "/MANIFEST.json"));
  EXPECT_EQ(m.at("format"), 1);
  EXPECT_EQ(m.at("step"), 7);
  ASSERT_EQ(m.at("files").size(), 2u);
  EXPECT_EQ(m["files"]["model.pt"]["size"], 11);  // "weights-abc"
  EXPECT_EQ(m["files"]["model.pt"]["crc32"], crc32_of("weights-abc", 11));
  const std::string state = "{\"tag\": \"abc\"}";
  EXPECT_EQ(m["files"]["state.json"]["size"], state.size());
  EXPECT_EQ(m["files"]["state.json"]["crc32"], crc32_of(state.data(), state.size()));
}

TEST(CheckpointStore, GivenCrcIsWrittenAsIs) {
  // The Checkpointer computes CRCs while serialising; the store trusts them.
  CheckpointStore store(test::temp_dir() + "/ckpt");
  std::vector<CheckpointFile> f = files("a");
  f[0].image.crc32 = crc32_of("weights-a", 9) ^ 1u;  // wrong on purpose: verify() must notice
  const std::string dir = store.save(1, f);
  const auto m = nlohmann::json::parse(slurp(dir + "/MANIFEST.json"));
  EXPECT_EQ(m["files"]["model.pt"]["crc32"], crc32_of("weights-a", 9) ^ 1u);
  EXPECT_TRUE(contains(CheckpointStore::verify(dir), dir + "/model.pt"));
}

TEST(CheckpointStore, Crc32IsZlibs) {
  EXPECT_EQ(crc32_of("123456789", 9), 0xCBF43926u);  // the standard CRC-32 check value
  EXPECT_EQ(crc32_of("", 0), 0u);
}

TEST(CheckpointStore, FlippedByteIsNamedByVerifyAndRead) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  const std::string dir = store.save(1, files("one"));
  flip_byte(dir + "/model.pt", 2);
  const std::string problem = CheckpointStore::verify(dir);
  EXPECT_TRUE(contains(problem, dir + "/model.pt")) << problem;
  EXPECT_TRUE(contains(problem, "corrupt")) << problem;
  const std::string m = error_of<TrainError>([&] { CheckpointStore::read(dir, "model.pt"); });
  EXPECT_TRUE(contains(m, dir + "/model.pt")) << m;
  // The other file is still fine, and list() (sizes only) still counts the folder.
  EXPECT_EQ(text(CheckpointStore::read(dir, "state.json")), "{\"tag\": \"one\"}");
  EXPECT_EQ(steps(store), std::vector<int64_t>{1});
}

TEST(CheckpointStore, TruncatedFileIsNotListedAndIsNamed) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  store.save(1, files("one"));
  const std::string dir = store.save(2, files("two"));
  fs::resize_file(dir + "/state.json", 3);
  EXPECT_EQ(steps(store), std::vector<int64_t>{1});
  const std::string problem = CheckpointStore::verify(dir);
  EXPECT_TRUE(contains(problem, dir + "/state.json")) << problem;
  EXPECT_TRUE(contains(problem, "truncated")) << problem;
  const std::string m = error_of<TrainError>([&] { CheckpointStore::read(dir, "state.json"); });
  EXPECT_TRUE(contains(m, dir + "/state.json")) << m;
}

TEST(CheckpointStore, MissingFileIsNotListedAndIsNamed) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  store.save(1, files("one"));
  const std::string dir = store.save(2, files("two"));
  fs::remove(dir + "/model.pt");
  EXPECT_EQ(steps(store), std::vector<int64_t>{1});
  const std::string problem = CheckpointStore::verify(dir);
  EXPECT_TRUE(contains(problem, dir + "/model.pt")) << problem;
  EXPECT_TRUE(contains(problem, "missing")) << problem;
  const std::string m = error_of<TrainError>([&] { CheckpointStore::read(dir, "model.pt"); });
  EXPECT_TRUE(contains(m, dir + "/model.pt")) << m;
}

TEST(CheckpointStore, FolderWithoutValidManifestIsNotACheckpoint) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  store.save(5, files("a"));
  const std::string no_manifest = store.save(6, files("b"));
  fs::remove(no_manifest + "/MANIFEST.json");
  const std::string bad_manifest = store.save(7, files("c"));
  test::write_file(bad_manifest + "/MANIFEST.json", "{\"format\": 1, \"files\": ");
  fs::create_directories(store.root() + "/step-8");  // empty
  fs::create_directories(store.root() + "/notes");   // not a step folder
  test::write_file(store.root() + "/step-9", "a file, not a folder");
  EXPECT_EQ(steps(store), std::vector<int64_t>{5});
  for (const auto& dir : {no_manifest, bad_manifest}) {
    const std::string problem = CheckpointStore::verify(dir);
    EXPECT_TRUE(contains(problem, "MANIFEST.json")) << problem;
    EXPECT_TRUE(contains(problem, dir)) << problem;
    EXPECT_TRUE(
        contains(error_of<TrainError>([&] { CheckpointStore::read(dir, "model.pt"); }), dir));
  }
  EXPECT_TRUE(contains(CheckpointStore::verify(store.root() + "/step-99"), "does not exist"));
}

TEST(CheckpointStore, ListIsOrderedByStepNotByName) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  for (int64_t s : {100, 9, 20, 1000}) store.save(s, files(std::to_string(s)));
  EXPECT_EQ(steps(store), (std::vector<int64_t>{9, 20, 100, 1000}));
  EXPECT_TRUE(CheckpointStore(test::temp_dir() + "/never-made").list().empty());
}

TEST(CheckpointStore, SavingTheSameStepTwiceReplacesIt) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  store.save(4, files("old"));
  const std::string dir = store.save(4, {{"model.pt", bytes("weights-new!")}});
  EXPECT_EQ(text(CheckpointStore::read(dir, "model.pt")), "weights-new!");
  EXPECT_FALSE(CheckpointStore::has(dir, "state.json"));  // the old folder's files are gone
  EXPECT_FALSE(fs::exists(dir + "/state.json"));
  EXPECT_EQ(CheckpointStore::verify(dir), "");
  EXPECT_EQ(steps(store), std::vector<int64_t>{4});
  EXPECT_EQ(entries(store.root()), std::vector<std::string>{"step-4"});
}

TEST(CheckpointStore, FailedSaveLeavesOlderCheckpointsAndNoPartialFolder) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  const std::string one = store.save(1, files("one"));
  const std::string two = store.save(2, files("two"));
  // A file name the store cannot create (its folder does not exist) fails mid-save, after
  // model.pt was written: both a new step and a replacement of step 2 must leave things as
  // they were.
  std::vector<CheckpointFile> bad = files("bad");
  bad.push_back({"no-such-folder/extra.pt", bytes("x")});
  for (int64_t step : {3, 2}) {
    const std::string m = error_of<TrainError>([&] { store.save(step, bad); });
    EXPECT_TRUE(contains(m, "no-such-folder/extra.pt")) << m;
    EXPECT_TRUE(contains(m, ".partial-step-" + std::to_string(step))) << m;
  }
  EXPECT_EQ(steps(store), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(entries(store.root()), (std::vector<std::string>{"step-1", "step-2"}));
  EXPECT_EQ(CheckpointStore::verify(one), "");
  EXPECT_EQ(CheckpointStore::verify(two), "");
  EXPECT_EQ(text(CheckpointStore::read(two, "model.pt")), "weights-two");
}

TEST(CheckpointStore, RootThatIsARegularFileIsATrainErrorNamingIt) {
  const std::string tmp = test::temp_dir();
  CheckpointStore store(tmp + "/ckpt");
  const std::string one = store.save(1, files("one"));
  // The run's checkpoint folder moved away and a regular file took its place.
  fs::rename(tmp + "/ckpt", tmp + "/ckpt-moved");
  test::write_file(tmp + "/ckpt", "not a folder");
  const std::string m = error_of<TrainError>([&] { store.save(2, files("two")); });
  EXPECT_TRUE(contains(m, tmp + "/ckpt")) << m;
  EXPECT_EQ(slurp(tmp + "/ckpt"), "not a folder");
  EXPECT_TRUE(store.list().empty());
  EXPECT_EQ(CheckpointStore::verify(tmp + "/ckpt-moved/step-1"), "");

  // The same below a regular file: the root cannot be created.
  CheckpointStore below(tmp + "/ckpt/sub");
  EXPECT_TRUE(
      contains(error_of<TrainError>([&] { below.save(1, files("x")); }), tmp + "/ckpt/sub"));
}

TEST(CheckpointStore, PruneKeepsNewestNPlusKeepAndLinkTargets) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  std::vector<std::string> dirs;
  for (int s = 1; s <= 8; ++s) dirs.push_back(store.save(s * 10, files(std::to_string(s))));
  store.prune(0, "");  // 0 keeps everything
  EXPECT_EQ(steps(store), (std::vector<int64_t>{10, 20, 30, 40, 50, 60, 70, 80}));
  store.prune(-1, "");
  EXPECT_EQ(steps(store).size(), 8u);

  store.prune(3, dirs[1]);  // `keep` (step 20) is not linked: kept by the argument alone
  EXPECT_EQ(steps(store), (std::vector<int64_t>{20, 60, 70, 80}));

  store.link("last", dirs[5]);  // step 60
  store.link("best", dirs[6]);  // step 70
  store.prune(1, "");
  EXPECT_EQ(steps(store), (std::vector<int64_t>{60, 70, 80}));
  EXPECT_EQ(store.resolve_link("last"), dirs[5]);
  EXPECT_EQ(store.resolve_link("best"), dirs[6]);

  store.prune(10, "");  // fewer than keep_last: nothing goes
  EXPECT_EQ(steps(store), (std::vector<int64_t>{60, 70, 80}));
}

TEST(CheckpointStore, PruneLeavesIncompleteFoldersToRemovePartial) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  for (int s = 1; s <= 3; ++s) store.save(s, files(std::to_string(s)));
  fs::create_directories(store.root() + "/.partial-step-4-1");
  store.prune(1, "");
  EXPECT_EQ(steps(store), std::vector<int64_t>{3});
  EXPECT_TRUE(fs::exists(store.root() + "/.partial-step-4-1"));
}

TEST(CheckpointStore, LinksReplaceAtomicallyAndDanglingResolvesEmpty) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  const std::string a = store.save(1, files("a"));
  const std::string b = store.save(2, files("b"));
  EXPECT_EQ(store.resolve_link("last"), "");
  store.link("last", a);
  EXPECT_EQ(store.resolve_link("last"), a);
  store.link("last", b);
  EXPECT_EQ(store.resolve_link("last"), b);
  store.link("best", a);
  EXPECT_EQ(store.resolve_link("best"), a);
  EXPECT_EQ(store.resolve_link("last"), b);
  // Relative links (the run folder may move), no temporary link left behind.
  EXPECT_TRUE(fs::is_symlink(store.root() + "/last"));
  EXPECT_EQ(fs::read_symlink(store.root() + "/last").string(), "step-2");
  EXPECT_EQ(entries(store.root()), (std::vector<std::string>{"best", "last", "step-1", "step-2"}));
  // Links are not checkpoints.
  EXPECT_EQ(steps(store), (std::vector<int64_t>{1, 2}));

  fs::remove_all(b);
  EXPECT_EQ(store.resolve_link("last"), "");
  EXPECT_EQ(store.resolve_link("nothing"), "");
  store.link("last", a);  // replaces a dangling link too
  EXPECT_EQ(store.resolve_link("last"), a);
}

TEST(CheckpointStore, RemovePartialRemovesOnlyIncompleteFolders) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  const std::string one = store.save(1, files("a"));
  store.link("last", one);
  test::write_file(store.root() + "/.partial-step-2-999/model.pt", "half");
  fs::create_directories(store.root() + "/.partial-step-3-998");
  fs::create_directories(store.root() + "/.partial-replaced-step-1");
  fs::create_directories(store.root() + "/step-4");  // never got its manifest
  fs::create_directories(store.root() + "/keep-me");
  test::write_file(store.root() + "/notes.txt", "mine");
  EXPECT_EQ(store.remove_partial(), 4);
  EXPECT_EQ(entries(store.root()),
            (std::vector<std::string>{"keep-me", "last", "notes.txt", "step-1"}));
  EXPECT_EQ(CheckpointStore::verify(one), "");
  EXPECT_EQ(store.resolve_link("last"), one);
  EXPECT_EQ(store.remove_partial(), 0);
  EXPECT_EQ(CheckpointStore(test::temp_dir() + "/none").remove_partial(), 0);
}

TEST(CheckpointStore, RemovePartialPutsBackACheckpointAReplacingSaveMovedAside) {
  // A save of an existing step moves the old folder aside, then renames the new one in; killed
  // in between, the old copy is the only one and must come back, not be cleaned away.
  CheckpointStore store(test::temp_dir() + "/ckpt");
  const std::string two = store.save(2, files("old"));
  fs::rename(two, store.root() + "/.partial-replaced-step-2");
  test::write_file(store.root() + "/.partial-step-2-999/model.pt", "weights-new");
  EXPECT_EQ(store.remove_partial(), 1);  // the half-written new one
  EXPECT_EQ(entries(store.root()), std::vector<std::string>{"step-2"});
  EXPECT_EQ(CheckpointStore::verify(two), "");
  EXPECT_EQ(text(CheckpointStore::read(two, "model.pt")), "weights-old");

  // When the new one did get in place, the aside copy is just removed.
  store.save(2, files("new"));
  const std::string aside = store.root() + "/.partial-replaced-step-2";
  fs::create_directories(aside);
  fs::copy(two, aside, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  EXPECT_EQ(store.remove_partial(), 1);
  EXPECT_EQ(entries(store.root()), std::vector<std::string>{"step-2"});
  EXPECT_EQ(text(CheckpointStore::read(two, "model.pt")), "weights-new");
}

TEST(CheckpointStore, ManifestWithMalformedEntriesIsNotACheckpoint) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  store.save(1, files("a"));
  const std::string dir = store.save(2, files("b"));
  for (const std::string files_json :
       {"{\"model.pt\": 5}", "{\"model.pt\": {\"size\": \"9\", \"crc32\": 1}}",
        "{\"model.pt\": {\"crc32\": 1}}", "{\"../model.pt\": {\"size\": 9, \"crc32\": 1}}"}) {
    test::write_file(dir + "/MANIFEST.json", "{\"format\": 1, \"files\": " + files_json + "}");
    EXPECT_EQ(steps(store), std::vector<int64_t>{1}) << files_json;
    EXPECT_TRUE(contains(CheckpointStore::verify(dir), "MANIFEST.json")) << files_json;
    EXPECT_TRUE(
        contains(error_of<TrainError>([&] { CheckpointStore::read(dir, "model.pt"); }), dir));
  }
}

TEST(CheckpointStore, StepOf) {
  EXPECT_EQ(CheckpointStore::step_of("/runs/x/checkpoints/step-12"), 12);
  EXPECT_EQ(CheckpointStore::step_of("step-0"), 0);
  EXPECT_EQ(CheckpointStore::step_of("step-007"), 7);
  EXPECT_EQ(CheckpointStore::step_of("step-123456789012"), 123456789012);
  EXPECT_EQ(CheckpointStore::step_of("/x/step-"), -1);
  EXPECT_EQ(CheckpointStore::step_of("/x/step-abc"), -1);
  EXPECT_EQ(CheckpointStore::step_of("/x/step-12a"), -1);
  EXPECT_EQ(CheckpointStore::step_of("/x/step--1"), -1);
  EXPECT_EQ(CheckpointStore::step_of("/x/.partial-step-3-99"), -1);
  EXPECT_EQ(CheckpointStore::step_of("/x/other"), -1);
  EXPECT_EQ(CheckpointStore::step_of("/step-5/last"), -1);
}

TEST(CheckpointStore, RemovePartialLeavesASaveWhoseWriterIsRunning) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  const std::string tag = CheckpointStore::writer_tag();
  const std::string host = tag.substr(tag.find('@') + 1);
  EXPECT_EQ(tag, std::to_string(::getpid()) + "@" + host);
  // A live writer on this machine: a child that waits to be killed.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  // A writer that has ended: a child already reaped.
  const pid_t gone = ::fork();
  ASSERT_GE(gone, 0);
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const std::string live = ".partial-step-5-" + std::to_string(child) + "@" + host;
  const std::string live_file =
      ".partial-optimizer-step-5-rank-1-" + std::to_string(child) + "@" + host + ".pt";
  fs::create_directories(store.root() + "/" + live);
  test::write_file(store.root() + "/" + live_file, "partition");
  fs::create_directories(store.root() + "/.partial-step-6-" + std::to_string(gone) + "@" + host);
  // This process is not a writer yet when it cleans (a pid reused after a restart, as in
  // containers); another machine's writer cannot be asked: both count as gone.
  fs::create_directories(store.root() + "/.partial-step-7-" + tag);
  fs::create_directories(store.root() + "/.partial-step-8-" + std::to_string(child) +
                         "@other-host");
  EXPECT_TRUE(CheckpointStore::writer_alive(live));
  EXPECT_TRUE(CheckpointStore::writer_alive(live_file));
  EXPECT_FALSE(CheckpointStore::writer_alive(".partial-step-7-" + tag));
  EXPECT_FALSE(CheckpointStore::writer_alive(".partial-step-2-999"));  // no writer named

  std::vector<std::string> in_use;
  EXPECT_EQ(store.remove_partial(&in_use), 3);
  EXPECT_EQ(entries(store.root()), (std::vector<std::string>{live_file, live}));
  std::sort(in_use.begin(), in_use.end());
  EXPECT_EQ(in_use,
            (std::vector<std::string>{store.root() + "/" + live_file, store.root() + "/" + live}));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(store.remove_partial(), 2);  // its writer is gone now
  EXPECT_EQ(entries(store.root()), std::vector<std::string>{});
}

TEST(CheckpointStore, SaveNamesItsPartialFolderAfterItsWriter) {
  CheckpointStore store(test::temp_dir() + "/ckpt");
  // The message of a failed save names the folder it was writing.
  fs::create_directories(store.root());
  const std::string m = test::message_of([&] {
    std::vector<CheckpointFile> bad = files("x");
    bad.push_back({"sub/dir.pt", bytes("1")});
    store.save(9, bad);
  });
  EXPECT_TRUE(contains(m, ".partial-step-9-" + CheckpointStore::writer_tag())) << m;
}

}  // namespace
}  // namespace unitrain
