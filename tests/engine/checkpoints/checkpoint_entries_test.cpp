// The checkpoint entries, each on its own: what one saves, a fresh owner restores exactly.
#include "unitrain/engine/checkpoints/checkpoint_entries.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/regression_fixture.h"
#include "test_util.h"
#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/engine/callback_list.h"
#include "unitrain/engine/step/lr_controller.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/precision/precision.h"

namespace unitrain {
namespace {

/// Saves `entries` into a new checkpoint folder and returns it (with `state` as its
/// trainer_state.json fields).
std::string save_entries(const std::vector<CheckpointEntry*>& entries, TrainerStateFile& state) {
  CheckpointWrite out;
  out.writes = true;
  for (CheckpointEntry* e : entries) e->save(out);
  for (CheckpointFile& f : out.files) {
    if (f.produce) f.image = f.produce();
  }
  state = out.state;
  const std::string dir = test::temp_dir() + "/step-1";
  return CheckpointStore::write_new(dir, 1, out.files);
}

std::vector<std::string> file_names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& [name, size] : CheckpointStore::files_of(dir)) names.push_back(name);
  return names;
}

/// One Adam step of the regression module, leaving gradients of a second batch accumulated.
void train_a_little(test::Regression& m, torch::optim::Optimizer& opt) {
  Batch b{{"x", torch::randn({8, 4})}, {"y", torch::randn({8})}};
  m.training_step(b).loss.backward();
  opt.step();
  opt.zero_grad();
  m.training_step(b).loss.backward();  // a window half done
}

bool same(const torch::Tensor& a, const torch::Tensor& b) { return torch::equal(a, b); }

TEST(CheckpointEntries, ModelOptimizerGradientsAndGeneratorsRoundTrip) {
  torch::manual_seed(1);
  test::Regression m;
  torch::optim::Adam opt(m.parameters(), torch::optim::AdamOptions(0.01));
  train_a_little(m, opt);
  Precision precision(PrecisionMode::Fp32, m);
  TrainState counters;
  counters.micro_in_window = 1;
  auto model = model_entry(m, precision);
  auto optimizer = optimizer_entry(opt, m, nullptr, nullptr, test::temp_dir());
  auto grads = gradients_entry(m, counters);
  auto rng = rng_entry(nullptr);
  TrainerStateFile state;
  const std::string dir =
      save_entries({model.get(), optimizer.get(), grads.get(), rng.get()}, state);
  EXPECT_EQ(file_names(dir),
            (std::vector<std::string>{"grads.pt", "model.pt", "optimizer.pt", "rng-rank-0.pt"}));
  const torch::Tensor weight = m.fc->weight.clone(), grad = m.fc->weight.grad().clone();
  const torch::Tensor next_draw = torch::rand({3});

  // A fresh module and optimizer, moved on: restored, they continue as the saved ones would.
  torch::manual_seed(2);
  test::Regression m2;
  torch::optim::Adam opt2(m2.parameters(), torch::optim::AdamOptions(0.01));
  Precision precision2(PrecisionMode::Fp32, m2);
  const CheckpointRead in{dir, state, 0};
  model_entry(m2, precision2)->restore(in);
  optimizer_entry(opt2, m2, nullptr, nullptr, "")->restore(in);
  gradients_entry(m2, counters)->restore(in);
  rng_entry(nullptr)->restore(in);
  EXPECT_TRUE(same(m2.fc->weight, weight));
  EXPECT_TRUE(same(m2.fc->weight.grad(), grad));
  EXPECT_TRUE(same(torch::rand({3}), next_draw));
  opt.step();
  opt2.step();
  EXPECT_TRUE(same(m2.fc->weight, m.fc->weight)) << "Adam's moments were restored";
}

TEST(CheckpointEntries, GradientsOnlyInsideAWindow) {
  test::Regression m;
  TrainState counters;  // micro_in_window 0: a window's end
  auto grads = gradients_entry(m, counters);
  CheckpointWrite out;
  out.writes = true;
  grads->save(out);
  EXPECT_TRUE(out.files.empty());
}

TEST(CheckpointEntries, OnlyTheWritingRankProducesFiles) {
  test::Regression m;
  Precision precision(PrecisionMode::Fp32, m);
  torch::optim::SGD opt(m.parameters(), torch::optim::SGDOptions(0.1));
  CheckpointWrite out;  // writes = false: another rank
  model_entry(m, precision)->save(out);
  optimizer_entry(opt, m, nullptr, nullptr, "")->save(out);
  rng_entry(nullptr)->save(out);
  EXPECT_TRUE(out.files.empty());
}

/// A callback with state of its own.
struct Counter : Callback {
  int seen = 0;
  void on_save_checkpoint(Trainer&, CheckpointEntries& e) override {
    e["counter"] = std::to_string(seen);
  }
  void on_load_checkpoint(Trainer&, const CheckpointEntries& e) override {
    seen = std::stoi(e.at("counter"));
  }
};

TEST(CheckpointEntries, CallbacksAndTheScheduleRoundTrip) {
  Trainer trainer(test::base_config(test::temp_dir()));
  CallbackList saving(trainer), loading(trainer);
  auto a = std::make_shared<Counter>(), b = std::make_shared<Counter>();
  a->seen = 41;
  saving.add(a);
  loading.add(b);
  test::Regression m;
  torch::optim::SGD opt(m.parameters(), torch::optim::SGDOptions(0.1));
  TrainState counters;
  LrController lr(opt, nullptr, false);
  auto callbacks = callbacks_entry(saving);
  auto schedule = schedule_entry(lr, counters);
  TrainerStateFile state;
  const std::string dir = save_entries({callbacks.get(), schedule.get()}, state);
  EXPECT_EQ(file_names(dir), std::vector<std::string>{"extra-counter"});
  callbacks_entry(loading)->restore({dir, state, 0});
  EXPECT_EQ(b->seen, 41);
}

TEST(CheckpointEntries, ACallbackEntryNameMustBeAPlainFileName) {
  struct Bad : Callback {
    void on_save_checkpoint(Trainer&, CheckpointEntries& e) override { e["a/b"] = "x"; }
  };
  Trainer trainer(test::base_config(test::temp_dir()));
  CallbackList list(trainer);
  list.add(std::make_shared<Bad>());
  CheckpointWrite out;
  out.writes = true;
  EXPECT_TRUE(test::contains(test::message_of([&] { callbacks_entry(list)->save(out); }),
                             "must be a plain file name, got 'a/b'"));
}

TEST(CheckpointEntries, AMissingOptimizerStateIsNamed) {
  test::Regression m;
  torch::optim::SGD opt(m.parameters(), torch::optim::SGDOptions(0.1));
  TrainerStateFile state;
  const std::string dir = save_entries({}, state);
  EXPECT_TRUE(
      test::contains(test::error_of<TrainError>([&] {
                       optimizer_entry(opt, m, nullptr, nullptr, "")->restore({dir, state, 0});
                     }),
                     "holds no optimizer state (optimizer.pt or optimizer-rank-0.pt)"));
}

}  // namespace
}  // namespace unitrain
