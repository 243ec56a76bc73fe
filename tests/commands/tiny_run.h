#pragma once
// A tiny config-driven classifier run for the commands' tests: an mlp on synthetic data.
#include <string>

#include "test_util.h"
#include "unitrain/core/config.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/engine/config/load_config.h"

namespace unitrain::test {

/// The run's YAML in run folder `run_dir`, `sizes` its mlp's layer sizes; a test set of its own.
inline std::string tiny_run_yaml(const std::string& run_dir, const std::string& sizes = "[4, 3]") {
  return "name: tiny\nrun_dir: " + run_dir + "\nseed: 3\n" +
         "model: {type: mlp, args: {sizes: " + sizes + "}}\n" +
         "objective: {losses: [{type: cross_entropy}], metrics: [{type: accuracy}]}\n"
         "data: {train: {type: synthetic, args: {n: 32, features: 4, classes: 3}},\n"
         "       test: {type: synthetic, args: {n: 16, features: 4, classes: 3, seed: 9}},\n"
         "       collate: {type: stack}, loader: {batch_size: 8}}\n"
         "optimizer: {type: sgd, lr: 0.1}\ntrain: {max_length: 1 epochs}\n";
}

/// `yaml` resolved as `unitrain train FILE` reads it.
inline Config loaded_run(const std::string& yaml) {
  register_builtins();
  return load_run_config({write_file(temp_dir() + "/run.yaml", yaml)}, {});
}

}  // namespace unitrain::test
