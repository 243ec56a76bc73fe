#pragma once
// A small regression module, its data and a run config, shared by the engine's Trainer tests.
#include <torch/torch.h>

#include <limits>
#include <string>

#include "unitrain/core/config.h"
#include "unitrain/core/train_module.h"
#include "unitrain/data/tensor_dataset.h"

namespace unitrain::test {

// y = x . w + b, learned by a linear layer with mean squared error.
struct Regression : TrainModule {
  torch::nn::Linear fc{nullptr};
  double poison_at = -1;  // makes the loss NaN on this training step (1-based)
  int64_t calls = 0;
  Regression() { fc = register_module("fc", torch::nn::Linear(4, 1)); }
  StepOutput training_step(const Batch& b) override {
    ++calls;
    auto pred = fc->forward(b.at("x")).squeeze(1);
    auto loss = torch::mse_loss(pred, b.at("y"));
    if (calls == poison_at) loss = loss * std::numeric_limits<float>::quiet_NaN();
    return {loss, {{"mae", MetricValue((pred - b.at("y")).abs().mean())}}};
  }
  StepOutput validation_step(const Batch& b) override {
    auto pred = fc->forward(b.at("x")).squeeze(1);
    return {torch::mse_loss(pred, b.at("y")), {}};
  }
};

inline DatasetPtr regression_data(int64_t n) {
  torch::manual_seed(7);
  auto x = torch::randn({n, 4});
  auto y = x.matmul(torch::tensor({1.0f, -2.0f, 0.5f, 3.0f})) + 0.1f;
  return std::make_shared<TensorDataset>(Batch{{"x", x}, {"y", y}});
}

inline Config base_config(const std::string& run_dir, const std::string& extra = "") {
  return Config::from_string("run_dir: " + run_dir + "\n" +
                             "optimizer: {type: sgd, lr: 0.05}\n"
                             "data: {loader: {batch_size: 8, workers: 0, shuffle: false}}\n"
                             "log: {trackers: [jsonl, csv]}\n"
                             "train: {max_length: 2 epochs, log_every: 1 step}\n" +
                             extra);
}

}  // namespace unitrain::test
