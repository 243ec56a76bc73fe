// The library examples' module, data and config: classifier.cpp trains it, evaluate.cpp reads
// its checkpoint back, evaluates and exports it.
#pragma once
#include <torch/torch.h>

#include <string>

#include "unitrain/core/config.h"
#include "unitrain/data/csv_dataset.h"
#include "unitrain/data/subset_dataset.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/metrics/metric.h"
#include "unitrain/models/mlp.h"

struct Classifier : unitrain::TrainModule {
  unitrain::models::Mlp net{nullptr};
  Classifier() { net = register_module("net", unitrain::models::mlp({64, 128, 10})); }

  unitrain::StepOutput training_step(const unitrain::Batch& b) override {
    auto logits = net->forward(b.at("x") / 16.0);  // digits pixels are 0..16
    return {torch::cross_entropy_loss(logits, b.at("y")),
            {{"acc", unitrain::metrics::accuracy(logits, b.at("y"))}}};
  }
  unitrain::StepOutput validation_step(const unitrain::Batch& b) override {
    return training_step(b);
  }
};

/// scikit-learn's digits, 20% held out (the same split every time: seed 42).
inline unitrain::Split digits_split() {
  unitrain::CsvOptions csv;
  csv.path = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
  csv.header = false;
  csv.target = "64";
  return unitrain::random_split(unitrain::load_csv(csv), 0.2, 42);
}

/// The run's config: AdamW, batches of 32, up to 30 epochs, into `run_dir`.
inline unitrain::Config classifier_config(const std::string& run_dir) {
  return unitrain::Config::from_string("name: library-digits\nrun_dir: " + run_dir + "\n" +
                                       "optimizer: {type: adamw, lr: 2.0e-3}\n"
                                       "data: {loader: {batch_size: 32}}\n"
                                       "train: {max_length: 30 epochs, log_every: 1 epoch}\n");
}
