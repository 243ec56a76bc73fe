#pragma once
// `unitrain eval`: a trained run's checkpoint evaluated on a split, as the run built its model and
// read its inputs (its own config.yaml).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/commands/class_results.h"
#include "unitrain/core/config.h"
#include "unitrain/engine/metric_map.h"

namespace unitrain {

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
/// `config` describes (open_run), runs the validation loop over `split` (val | test) and writes
/// run_dir/results/<split>.json (with a classifier's per-class results and confusion matrix).
/// ConfigError when the checkpoint or the split is missing.
/// `weights`: validated = the weights validation used, so the metric that chose the checkpoint
/// is reproduced (a callback's own, e.g. the ema average; else the trained ones); trained =
/// model.pt as trained.
EvalResult evaluate_checkpoint(const Config& config, const std::string& checkpoint,
                               const std::string& split, const std::string& weights = "validated");

/// The class names checkpoint `dir` holds (classes.json), or none (a run whose data has none,
/// or a checkpoint from before they were kept).
std::vector<std::string> checkpoint_class_names(const std::string& dir);

}  // namespace unitrain
