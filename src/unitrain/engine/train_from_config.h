#pragma once
// The config-driven path: build data, an ObjectiveModule and a Trainer from one resolved config.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "unitrain/core/config.h"
#include "unitrain/engine/results/class_results.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {

class ObjectiveModule;

struct ConfigRunResult {
  FitResult fit;
  MetricMap test;  ///< test-split metrics (`test/...`), empty without data.test
};

/// Trains what `config` (resolved by load_run_config) describes, then evaluates data.test when
/// given. ConfigError for bad setup, TrainError for failures during training.
ConfigRunResult train_from_config(const Config& config);

/// What `unitrain eval` measured.
struct EvalResult {
  std::string split;       ///< val | test
  std::string checkpoint;  ///< the checkpoint folder evaluated
  int64_t step = 0;        ///< its optimizer step
  MetricMap metrics;       ///< `<split>/loss`, `<split>/<metric>`
  /// A classifier's results class by class, labelled with the checkpoint's class names
  /// (classes.json) when it has them, else with the class indices; empty for other models.
  std::optional<ClassResults> classes;
  std::string results_file;  ///< run_dir/results/<split>.json
};

/// Loads the model of checkpoint `checkpoint` (best | last | a checkpoint folder) of the run
/// `config` describes, runs the validation loop over `split` (val | test) and writes
/// run_dir/results/<split>.json (with a classifier's per-class results and confusion matrix).
/// ConfigError when the checkpoint or the split is missing.
/// `weights`: validated = the weights validation used, so the metric that chose the checkpoint
/// is reproduced (a callback's own, e.g. the ema average; else the trained ones); trained =
/// model.pt as trained.
EvalResult evaluate_checkpoint(const Config& config, const std::string& checkpoint,
                               const std::string& split, const std::string& weights = "validated");

/// A run's checkpoint loaded: the run's own config, its module with the checkpoint's weights
/// (as `weights` chooses, as for evaluate_checkpoint), the checkpoint folder.
struct LoadedCheckpoint {
  Config config;
  std::shared_ptr<ObjectiveModule> module;
  std::string dir;
};
/// Loads checkpoint `checkpoint` (best | last | a folder) of the run `config` names; `command`
/// names the caller in messages ("generate"). ConfigError when there is none.
LoadedCheckpoint load_checkpoint_module(const Config& config, const std::string& checkpoint,
                                        const std::string& weights, const char* command);

/// Writes the model of `checkpoint` to `out` as `format`: state_dict (a dict of tensors for
/// Python's torch.load, names as the model's state_dict()), safetensors (the same tensors and
/// names; metadata {"format": "pt"}) or torchscript (torch.jit.load can run it; built-in and
/// TorchScript models); `weights` as for evaluate_checkpoint. A checkpoint with class names
/// (classes.json) has them written beside `out` (`model.pt` -> `model.classes.json`, the same
/// format), and for safetensors also in the metadata ("classes": a JSON list). Returns the
/// checkpoint folder used.
/// `hf` (gpt2 and llama) writes the folder `out` as hf_export.h says, its weights sharded past
/// `max_shard_bytes`. A LoRA run (model.lora): `hf` writes PEFT's adapter folder
/// (peft_adapter.h), or with `merge` the model with its adapters merged into the weights
/// (W + scaling B A) as a Hugging Face folder; the other formats always write the merged model.
std::string export_checkpoint(const Config& config, const std::string& checkpoint,
                              const std::string& format, const std::string& out,
                              const std::string& weights = "validated",
                              uint64_t max_shard_bytes = 5'000'000'000ULL, bool merge = false);

}  // namespace unitrain
