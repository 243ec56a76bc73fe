// unitrain checkpoint inspect | verify | merge, on checkpoints written through CheckpointStore.
#include "unitrain/checkpoint/checkpoint_tools.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "test_util.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/compat/optimizer_state_key.h"
#include "unitrain/optim/optimizer.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

std::vector<char> tools_bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::vector<torch::Tensor> tools_params() {
  std::vector<torch::Tensor> p{torch::linspace(-1, 1, 12).view({3, 4}), torch::linspace(0, 1, 5),
                               torch::linspace(1, 2, 7)};
  for (auto& t : p) t.requires_grad_();
  return p;
}

/// An Adam stepped twice over `params` (fresh tools_params(): the same trajectory each time).
std::unique_ptr<torch::optim::Adam> tools_adam(std::vector<torch::Tensor>& params) {
  auto adam = std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(0.1));
  for (int s = 0; s < 2; ++s) {
    for (auto& p : params) p.mutable_grad() = (p.detach() * (s + 1)).cos();
    adam->step();
  }
  return adam;
}

/// run/checkpoints/step-7: a 2-rank ZeRO checkpoint (parameter 0 on rank 0, 1 and 2 on rank 1).
std::string write_sharded_checkpoint(const std::string& run) {
  register_builtin_optimizers();
  // Two ranks' copies of the same trajectory; each then keeps its own parameters' state.
  auto key = [](const torch::Tensor& p) { return optimizer_state_key(p); };
  auto params0 = tools_params();
  auto part0 = tools_adam(params0);
  part0->state().erase(key(params0[1]));
  part0->state().erase(key(params0[2]));
  auto params1 = tools_params();
  auto part1 = tools_adam(params1);
  part1->state().erase(key(params1[0]));
  nlohmann::json state = {
      {"format", 1},
      {"world_size", 2},
      {"batch_size", 16},
      {"accumulation", 3},
      {"zero", 1},
      {"config_hash", "abcd0123"},
      {"state", {{"step", 7}, {"epoch", 1}, {"samples", 672}, {"batch_in_epoch", 4}}},
      {"metrics", {{"train", {{"train/loss", 0.5}}}, {"val", nlohmann::json::object()}}}};
  CheckpointStore store(run + "/checkpoints");
  const std::string dir = store.save(7, {{"model.pt", tools_bytes("weights")},
                                         {"optimizer-rank-0.pt", save_optimizer_state(*part0)},
                                         {"optimizer-rank-1.pt", save_optimizer_state(*part1)},
                                         {"trainer_state.json", tools_bytes(state.dump())}});
  store.link("last", dir);
  return dir;
}

TEST(CheckpointTools, InspectTellsTheCountersLayoutMetricsAndFiles) {
  const std::string run = test::temp_dir() + "/run";
  const std::string dir = write_sharded_checkpoint(run);
  const std::string text = inspect_checkpoint(run, false);  // a run_dir: its last checkpoint
  EXPECT_TRUE(test::contains(text, "checkpoint " + dir)) << text;
  EXPECT_TRUE(test::contains(text, "step 7, epoch 1 completed, 672 samples seen, batch 4")) << text;
  EXPECT_TRUE(test::contains(text,
                             "2 process(es), batch 16 per process, accumulation 3, "
                             "distributed.zero 1"))
      << text;
  EXPECT_TRUE(test::contains(text, "train/loss=0.5")) << text;
  EXPECT_TRUE(test::contains(text, "optimizer-rank-1.pt")) << text;
  const auto j = nlohmann::json::parse(inspect_checkpoint(dir, true));
  EXPECT_EQ(j["step"], 7);
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["config_hash"], "abcd0123");
  EXPECT_EQ(j["files"]["model.pt"], 7);
  EXPECT_TRUE(test::contains(
      test::config_error_of([&] { inspect_checkpoint(run + "/nope", false); }), "does not exist"));
}

TEST(CheckpointTools, VerifyNamesTheCorruptFileOfEachFolder) {
  const std::string run = test::temp_dir() + "/run";
  const std::string dir = write_sharded_checkpoint(run);
  std::string report;
  EXPECT_EQ(verify_checkpoints(dir, report), 0);
  EXPECT_EQ(report, dir + ": ok\n");
  {
    std::fstream f(dir + "/model.pt", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2);
    f.put('X');
  }
  report.clear();
  EXPECT_EQ(verify_checkpoints(run, report), 1);  // every step folder of the run
  EXPECT_TRUE(test::contains(report, dir + "/model.pt is corrupt")) << report;
  fs::remove(dir + "/optimizer-rank-1.pt");
  report.clear();
  EXPECT_EQ(verify_checkpoints(run + "/checkpoints", report), 1);
  EXPECT_TRUE(test::contains(report, "is corrupt") || test::contains(report, "missing")) << report;
}

TEST(CheckpointTools, VerifyWhileARunPrunesNamesNoCheckpointBroken) {
  // A run saves and prunes (keep_last 1) while `checkpoint verify` walks the folder: a folder
  // pruned under the reader is reported as pruned, never as a checkpoint with files missing.
  const std::string root = test::temp_dir() + "/ckpt";
  CheckpointStore store(root);
  std::vector<CheckpointFile> files;
  for (int f = 0; f < 6; ++f) {
    files.push_back(
        {"f" + std::to_string(f) + ".bin", tools_bytes(std::string(4096, char('a' + f)))});
  }
  store.save(1, files);
  std::atomic<bool> done{false};
  struct Joined : std::thread {
    using std::thread::thread;
    ~Joined() { join(); }
  };
  Joined run([&] {
    for (int64_t step = 2; step < 150; ++step) {
      store.save(step, files);
      store.prune(1, "");
    }
    done = true;
  });
  int walks = 0;
  while (!done) {
    std::string report;
    EXPECT_EQ(verify_checkpoints(root, report), 0) << report;
    ++walks;
  }
  EXPECT_GT(walks, 0);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(root)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"step-149"});  // nothing moved aside is left behind
}

TEST(CheckpointTools, MergeWritesOneOptimizerFileWithEveryPartitionsState) {
  const std::string run = test::temp_dir() + "/run";
  const std::string dir = write_sharded_checkpoint(run);
  const std::string out = test::temp_dir() + "/merged";
  EXPECT_EQ(merge_checkpoint(dir, out), out);
  EXPECT_EQ(CheckpointStore::verify(out), "");
  EXPECT_FALSE(CheckpointStore::has(out, "optimizer-rank-0.pt"));
  EXPECT_TRUE(CheckpointStore::has(out, "model.pt"));
  // Loaded into one optimizer: the whole state, as the unsharded optimizer had it.
  auto params = tools_params();
  auto whole = tools_adam(params);
  auto fresh_params = tools_params();
  torch::optim::Adam merged(fresh_params, torch::optim::AdamOptions(0.5));
  load_optimizer_state(merged, CheckpointStore::read(out, "optimizer.pt"), "optimizer.pt");
  ASSERT_EQ(merged.state().size(), 3u);
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& a = static_cast<const torch::optim::AdamParamState&>(
        *merged.state().at(optimizer_state_key(fresh_params[i])));
    const auto& b = static_cast<const torch::optim::AdamParamState&>(
        *whole->state().at(optimizer_state_key(params[i])));
    EXPECT_TRUE(torch::equal(a.exp_avg(), b.exp_avg())) << i;
    EXPECT_TRUE(torch::equal(a.exp_avg_sq(), b.exp_avg_sq())) << i;
    EXPECT_EQ(a.step(), b.step());
  }
  // Never over an existing path; a checkpoint with one optimizer file has nothing to merge.
  EXPECT_TRUE(
      test::contains(test::message_of([&] { merge_checkpoint(dir, out); }), "exists already"));
  EXPECT_TRUE(test::contains(test::message_of([&] { merge_checkpoint(out, out + "2"); }),
                             "holds no optimizer partitions"));
  EXPECT_FALSE(fs::exists(out + "2"));
}

}  // namespace
}  // namespace unitrain
