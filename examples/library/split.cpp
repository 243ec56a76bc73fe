// A model of your own split across processes: a residual MLP classifier of scikit-learn's 8x8
// digits built from tensor-parallel layers (each block a column- then a row-parallel Linear,
// Megatron's pair) that declares its units for pipeline parallelism (two blocks and a head).
// The same program runs on one process, or under unitrain launch with its layers cut over a
// tensor group, its units cut into pipeline stages, or both; the checkpoints hold whole tensors
// whatever the plan.
// Usage: library_split RUN_DIR [TENSOR_PARALLEL [PIPELINE_PARALLEL]]
//        unitrain launch --exec --nproc-per-node 2 -- library_split runs/split-tp 2
//        unitrain launch --exec --nproc-per-node 2 -- library_split runs/split-pp 1 2
//        unitrain launch --exec --nproc-per-node 4 -- library_split runs/split-both 2 2
#include <torch/torch.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "unitrain/core/error.h"
#include "unitrain/core/memory.h"
#include "unitrain/data/csv_dataset.h"
#include "unitrain/data/subset_dataset.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/parallel/tensor_parallel.h"

struct SplitMlp : unitrain::TrainModule {
  static constexpr int64_t kWidth = 64, kInner = 256, kBlocks = 2;
  torch::nn::ModuleList up{nullptr}, down{nullptr};
  torch::nn::Linear head{nullptr};

  /// `tp`: this process's tensor group (null: whole layers).
  explicit SplitMlp(const std::shared_ptr<unitrain::ProcessGroup>& tp) {
    up = register_module("up", torch::nn::ModuleList());
    down = register_module("down", torch::nn::ModuleList());
    for (int64_t i = 0; i < kBlocks; ++i) {
      up->push_back(unitrain::ColumnParallelLinear(kWidth, kInner, true, tp));  // its rows
      down->push_back(unitrain::RowParallelLinear(kInner, kWidth, true, tp));   // its columns
    }
    head = register_module("head", torch::nn::Linear(kWidth, 10));  // whole on every process
  }

  // Pipeline parallelism: the units in forward order, each with its own parameters.
  std::vector<std::vector<torch::Tensor>> units() override {
    std::vector<std::vector<torch::Tensor>> out;
    for (int64_t i = 0; i < kBlocks; ++i) {
      auto p = up[i]->parameters();
      for (const auto& d : down[i]->parameters()) p.push_back(d);
      out.push_back(p);
    }
    out.push_back(head->parameters());
    return out;
  }
  torch::Tensor forward_units(const unitrain::Batch& b, size_t first, size_t end,
                              const torch::Tensor& x) override {
    torch::Tensor h = first == 0 ? b.at("x") / 16.0 : x;  // digits pixels are 0..16
    for (size_t i = first; i < end; ++i) {
      if (i == size_t(kBlocks)) return head->forward(h);
      auto u = up->ptr<unitrain::ColumnParallelLinearImpl>(i);
      auto d = down->ptr<unitrain::RowParallelLinearImpl>(i);
      h = h + d->forward(torch::relu(u->forward(h)));  // one all-reduce a block
    }
    return h;
  }
  unitrain::StepOutput loss_of_units(const unitrain::Batch& b, const torch::Tensor& out) override {
    return {torch::cross_entropy_loss(out, b.at("y")), {}};
  }
  std::optional<std::string> stage_refusal() override { return std::nullopt; }

  unitrain::StepOutput training_step(const unitrain::Batch& b) override {
    return loss_of_units(b, forward_units(b, 0, kBlocks + 1, {}));
  }
  unitrain::StepOutput validation_step(const unitrain::Batch& b) override {
    return training_step(b);
  }
};

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::cerr << "usage: library_split RUN_DIR [TENSOR_PARALLEL [PIPELINE_PARALLEL]]\n";
    return 2;
  }
  unitrain::keep_freed_memory();  // steps reuse freed memory (what the unitrain command does)
  const std::string run_dir = argv[1];
  const std::string t = argc > 2 ? argv[2] : "1", p = argc > 3 ? argv[3] : "1";
  unitrain::Trainer trainer(unitrain::Config::from_string(
      "name: library-split\nrun_dir: " + run_dir + "\nseed: 7\n" +
      "optimizer: {type: adamw, lr: 2.0e-3}\n"
      "data: {loader: {batch_size: 32}}\n"
      "train: {max_length: 5 epochs, log_every: 1 epoch, accumulation_steps: 2}\n"
      "distributed: {tensor_parallel: " +
      t + ", pipeline_parallel: " + p + "}\n"));
  unitrain::CsvOptions csv;
  csv.path = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
  csv.header = false;
  csv.target = "64";
  const unitrain::Split split = unitrain::random_split(unitrain::load_csv(csv), 0.2, 42);
  // The model is built cut over this process's tensor group (the processes join for it now).
  SplitMlp module(trainer.tensor_group());
  const unitrain::FitResult result = trainer.fit(module, split.rest, split.held_out);
  char line[160];
  std::snprintf(line, sizeof line, "rank %d step %lld val/loss %.6f\n", trainer.rank(),
                static_cast<long long>(result.state.step), result.last_val.at("val/loss"));
  std::cout << line;
  return 0;
} catch (const unitrain::ConfigError& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 2;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
