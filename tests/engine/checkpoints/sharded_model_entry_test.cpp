// sharded_model_entry on its own (no Trainer, no loop): ZeRO 3's model parts saved by two ranks
// of one in-memory group come back into fresh modules at two ranks (each its own file) and at
// three (cut anew from the parts), with the buffer outside the units; a whole model.pt of a
// run without ZeRO 3 is cut into parts; LoRA's parts are its adapters' alone.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>

#include "parallel/run_ranks.h"
#include "test_util.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/frozen_weights.h"
#include "unitrain/checkpoint/model_shards.h"
#include "unitrain/core/error.h"
#include "unitrain/core/train_state.h"
#include "unitrain/engine/checkpoints/checkpoint_entries.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/shard_module.h"
#include "unitrain/parallel/sharded_parameters.h"
#include "unitrain/precision/precision.h"

namespace unitrain {
namespace {

/// Two units (a Linear each) and a buffer outside them.
struct TwoUnits : TrainModule {
  torch::nn::Linear first{nullptr}, second{nullptr};
  torch::Tensor seen;
  explicit TwoUnits(float base) {
    first = register_module("first", torch::nn::Linear(5, 3));
    second = register_module("second", torch::nn::Linear(3, 1));
    seen = register_buffer("seen", torch::zeros({2}));
    torch::NoGradGuard no_grad;
    float at = base;  // the same values in every rank (no shared generator across threads)
    for (auto& p : parameters()) {
      p.copy_(torch::arange(p.numel(), torch::kFloat32).view(p.sizes()) * 0.01f + at);
      at += 1;
    }
    seen.fill_(base);
  }
  StepOutput training_step(const Batch& b) override {
    return {second->forward(first->forward(b.at("x"))).sum(), {}};
  }
  StepOutput validation_step(const Batch& b) override { return training_step(b); }
  std::vector<std::vector<torch::Tensor>> units() override {
    return {first->parameters(), second->parameters()};
  }
};

std::vector<torch::Tensor> values_of(torch::nn::Module& m) {
  std::vector<torch::Tensor> out;
  for (const auto& p : m.parameters()) out.push_back(p.detach().clone());
  for (const auto& b : m.buffers()) out.push_back(b.detach().clone());
  return out;
}

void expect_values(torch::nn::Module& m, const std::vector<torch::Tensor>& want, int rank) {
  const std::vector<torch::Tensor> got = values_of(m);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(torch::equal(got[i], want[i])) << "rank " << rank << ", tensor " << i;
  }
}

/// `entry` saved by this rank at `counters` (rank 0 writes checkpoint folder `dir`), as a save
/// of the Trainer's does.
void save_into(CheckpointEntry& entry, const TrainState& counters, int rank, ProcessGroup& group,
               const std::string& dir) {
  CheckpointWrite out;
  out.writes = rank == 0;
  out.state.state = counters;
  entry.save(out);
  if (rank == 0) {
    for (CheckpointFile& f : out.files) {
      if (f.produce) f.image = f.produce();
    }
    CheckpointStore::write_new(dir, counters.step, out.files);
  }
  group.barrier();  // (as a save's end)
}

/// Two ranks train nothing and save their parts into `root`/step-3 (base 1: the values saved).
std::string save_by_two(const std::string& root) {
  const std::string dir = root + "/step-3";
  test::run_shared_ranks(2, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    TwoUnits module(1);
    torch::optim::SGD sgd(module.parameters(), torch::optim::SGDOptions(0.1));
    auto params = shard_module(group, module, sgd);
    TrainState counters;
    counters.step = 3;
    auto entry = sharded_model_entry(module, *params, *group, counters, nullptr, root);
    save_into(*entry, counters, rank, *group, dir);
  });
  return dir;
}

/// `world` ranks restore `dir` into modules of other values (base 7), then make them whole.
void restore_on(int world, const std::string& dir, const std::string& root) {
  const std::vector<torch::Tensor> saved = values_of(*std::make_unique<TwoUnits>(1));
  test::run_shared_ranks(world, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    TwoUnits module(7);
    torch::optim::SGD sgd(module.parameters(), torch::optim::SGDOptions(0.1));
    auto params = shard_module(group, module, sgd);
    TrainState counters;
    auto entry = sharded_model_entry(module, *params, *group, counters, nullptr, root);
    const TrainerStateFile state;
    entry->restore(CheckpointRead{dir, state, rank});
    unshard_module(module, *params);
    expect_values(module, saved, rank);
  });
}

TEST(ShardedModelEntry, PartsSavedByTwoRanksComeBackAtTwoAndAtThree) {
  const std::string root = test::temp_dir();
  const std::string dir = save_by_two(root);
  const auto files = CheckpointStore::files_of(dir);
  std::vector<std::string> names;
  for (const auto& [name, size] : files) names.push_back(name);
  EXPECT_EQ(names.size(), 3u) << ::testing::PrintToString(names);  // 2 parts and the layout
  restore_on(2, dir, root);                                        // each rank its own file
  restore_on(3, dir, root);                                        // cut anew from the two
}

TEST(ShardedModelEntry, AWholeModelOfARunWithoutZeroThreeIsCutIntoParts) {
  const std::string root = test::temp_dir();
  TwoUnits whole(1);
  Precision precision(PrecisionMode::Fp32, whole);
  auto entry = model_entry(whole, precision);
  CheckpointWrite out;
  out.writes = true;
  entry->save(out);
  for (CheckpointFile& f : out.files) {
    if (f.produce) f.image = f.produce();
  }
  const std::string dir = CheckpointStore::write_new(root + "/step-1", 1, out.files);
  restore_on(2, dir, root);
}

/// LoRA's shape: the first unit frozen (values of `frozen_base`), the second trained.
struct Adapted : TwoUnits {
  Adapted(float base, float frozen_base) : TwoUnits(base) {
    torch::NoGradGuard no_grad;
    for (auto& p : first->parameters()) {
      p.fill_(frozen_base);
      p.set_requires_grad(false);
    }
  }
  bool checkpoints_trainable_only() override { return true; }
};

/// `world` ranks with an Adapted(base, frozen_base) sharded: save into `dir` (`save`) or
/// restore from it, then make the module whole and compare it with Adapted(1, frozen_base).
/// With `refused`: the restore must throw a ConfigError naming it.
void adapted_on(int world, const std::string& root, const std::string& dir, bool save, float base,
                float frozen_base, const char* refused = nullptr) {
  const std::vector<torch::Tensor> want = values_of(*std::make_unique<Adapted>(1, frozen_base));
  test::run_shared_ranks(world, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    Adapted module(base, frozen_base);
    torch::optim::SGD sgd(module.second->parameters(), torch::optim::SGDOptions(0.1));
    auto params = shard_module(group, module, sgd);
    TrainState counters;
    counters.step = 3;
    auto entry = sharded_model_entry(module, *params, *group, counters, nullptr, root);
    if (save) return save_into(*entry, counters, rank, *group, dir);
    const TrainerStateFile state;
    if (refused != nullptr) {
      try {
        entry->restore(CheckpointRead{dir, state, rank});
        ADD_FAILURE() << "rank " << rank << " restored over another base";
      } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(refused), std::string::npos) << e.what();
      }
      return;
    }
    entry->restore(CheckpointRead{dir, state, rank});
    unshard_module(module, *params);
    expect_values(module, want, rank);
  });
}

TEST(ShardedModelEntry, LorasPartsAreTheAdaptersAloneAndTheBaseIsFingerprintedAsAWholeRunDoes) {
  const std::string root = test::temp_dir(), dir = root + "/step-3";
  adapted_on(2, root, dir, /*save=*/true, 1, 5);
  // No part of the frozen unit: the merged parts are the trained unit and the buffer.
  std::vector<std::string> names;
  for (const auto& [name, t] : merge_model_shards(dir)) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"second.weight", "second.bias", "seen"}));
  // The fingerprint of the parts is that of the whole module (any stage, any world size).
  const std::vector<char> saved = CheckpointStore::read(dir, "frozen_weights.json");
  EXPECT_EQ(std::string(saved.begin(), saved.end()), frozen_fingerprint(Adapted(1, 5)) + "\n");
  adapted_on(2, root, dir, /*save=*/false, 7, 5);  // each rank its own file, the base kept
  adapted_on(3, root, dir, /*save=*/false, 7, 5);  // re-cut
  // Another base than the one the adapters trained on is refused by name.
  adapted_on(3, root, dir, /*save=*/false, 7, 6, "frozen_weights.json");
}

}  // namespace
}  // namespace unitrain
