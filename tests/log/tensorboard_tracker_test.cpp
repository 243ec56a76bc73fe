// The tensorboard tracker's files (tests/integration/tensorboard_test.py reads their contents
// with TensorBoard's schema and an independent CRC).
#include "unitrain/log/tensorboard_tracker.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"
#include "unitrain/log/crc32c.h"

namespace unitrain {
namespace {

/// The records of an event file, each checked against its two CRCs.
std::vector<std::string> read_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  std::vector<std::string> records;
  size_t at = 0;
  auto u32 = [&](size_t p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[p + i]);
    return v;
  };
  while (at + 12 <= bytes.size()) {
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(bytes[at + i]);
    EXPECT_EQ(u32(at + 8), masked_crc32c(bytes.data() + at, 8));
    EXPECT_LE(at + 16 + len, bytes.size());
    if (at + 16 + len > bytes.size()) break;
    EXPECT_EQ(u32(at + 12 + len), masked_crc32c(bytes.data() + at + 12, len));
    records.push_back(bytes.substr(at + 12, len));
    at += 16 + len;
  }
  EXPECT_EQ(at, bytes.size());
  return records;
}

std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ConfigHparams, FlattensScalarsUnderTheKeyPaths) {
  const std::string yaml =
      "seed: 7\nmodel: {type: mlp, args: {sizes: [4, 8, 2], dropout: 0.5}}\n"
      "optimizer: {type: adamw, lr: 1.0e-3, quoted: '12'}\ntrain: {test_mode: false, x: null}\n"
      "objective: {losses: [{type: ce, weight: 1}]}\nname: ignored\n";
  const auto h = config_hparams(yaml, {"seed", "model", "optimizer", "train", "objective"}, "k");
  std::map<std::string, tensorboard::HParam> by_name;
  for (const auto& p : h) by_name[p.name] = p;
  ASSERT_EQ(by_name.count("seed"), 1u);
  EXPECT_EQ(by_name["seed"].kind, tensorboard::HParam::Kind::Number);
  EXPECT_EQ(by_name["seed"].number, 7);
  EXPECT_EQ(by_name["model.type"].text, "mlp");
  EXPECT_EQ(by_name["model.type"].kind, tensorboard::HParam::Kind::String);
  EXPECT_EQ(by_name["model.args.sizes"].text, "[4, 8, 2]");
  EXPECT_DOUBLE_EQ(by_name["optimizer.lr"].number, 1e-3);
  EXPECT_EQ(by_name["optimizer.quoted"].kind, tensorboard::HParam::Kind::String);
  EXPECT_EQ(by_name["train.test_mode"].kind, tensorboard::HParam::Kind::Bool);
  EXPECT_FALSE(by_name["train.test_mode"].flag);
  EXPECT_EQ(by_name.count("train.x"), 0u);  // null: left out
  EXPECT_EQ(by_name["objective.losses.0.weight"].number, 1);
  EXPECT_EQ(by_name.count("name"), 0u);
  // A key path that is not in the config is left out (with a warning), not fatal.
  EXPECT_TRUE(config_hparams(yaml, {"optimzer"}, "k").empty());
}

TEST(NewEventFileName, SortsAfterTheFilesThere) {
  const std::string dir = test::temp_dir();
  const std::string first = new_event_file_name(dir);
  EXPECT_EQ(first.rfind("events.out.tfevents.", 0), 0u) << first;
  // A file from the future (another machine's clock): the next name still sorts after it.
  test::write_file(dir + "/events.out.tfevents.9000000000.other.1.0", "");
  const std::string next = new_event_file_name(dir);
  EXPECT_GT(next, std::string("events.out.tfevents.9000000000.other.1.0")) << next;
  EXPECT_EQ(next.substr(0, 30), "events.out.tfevents.9000000001");
}

TEST(TensorBoardTracker, OneFilePerSegmentWithValidRecords) {
  const std::string dir = test::temp_dir();
  TensorBoardOptions options;
  options.hparams = {"seed", "optimizer"};
  RunInfo run;
  run.config_yaml = "seed: 3\noptimizer: {lr: 0.1}\n";
  run.dir = dir;
  run.first_step = 1;
  {
    TensorBoardTracker t(options);
    t.start(run);
    t.log({10, 0, 100, 1.0, {{"train/loss", 0.5}, {"train/lr", 0.1}}});
    t.log({20, 1, 200, 2.0, {{"val/acc", 0.9}}});
    t.finish({{{"train/loss", 0.5}, {"val/acc", 0.9}}, false});
  }
  // file_version, config text, hparams start, 2 scalar events, experiment (no end: stopped).
  std::vector<std::string> files = event_files(dir + "/tensorboard");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(read_records(files[0]).size(), 6u);
  run.first_step = 21;  // resumed after the checkpoint at step 20
  run.keep_events = 2;
  {
    TensorBoardTracker t(options);
    t.start(run);
    t.log({30, 1, 300, 3.0, {{"train/loss", 0.4}}});
    t.finish({{{"train/loss", 0.4}}, true});
  }
  files = event_files(dir + "/tensorboard");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(read_records(files[0]).size(), 6u);  // the first segment's file is untouched
  // file_version, session START, text, hparams start, scalars, experiment, session end.
  EXPECT_EQ(read_records(files[1]).size(), 7u);
}

TEST(TensorBoardTracker, NoFolderNoFiles) {
  TensorBoardTracker t(TensorBoardOptions{});
  t.start(RunInfo{});
  t.log({1, 0, 1, 0, {{"x", 1}}});
  t.finish({});
  EXPECT_EQ(t.path(), "");
}

}  // namespace
}  // namespace unitrain
