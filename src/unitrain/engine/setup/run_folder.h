#pragma once
// The run folder: created and checked, an earlier run archived, classes.json.
#include <cstdint>
#include <string>
#include <vector>

namespace unitrain {

/// Creates `run_dir` and checks it can be written, before any training: a ConfigError naming
/// the path otherwise.
void prepare_writable_dir(const std::string& run_dir);

/// Moves the files of an earlier run in `run_dir` (config.yaml, metrics.jsonl, metrics.csv,
/// train.log, classes.json, tensorboard/, logs/rank-N/, checkpoints/, results/) into
/// `run_dir/history/<UTC time>/`, so a new run never overwrites them. Returns the folder they went
/// to, or "" when there was nothing to move.
std::string archive_previous_run(const std::string& run_dir);

/// Writes run_dir/classes.json, `{"classes": [name of class 0, name of class 1, ...]}`: what
/// the training data's class indices mean (Dataset::class_names). Nothing when `classes` is
/// empty.
void write_class_names(const std::string& run_dir, const std::vector<std::string>& classes);

/// The text of a classes.json, `{"classes": [...]}`, or "" when `classes` is empty.
std::string class_names_json(const std::vector<std::string>& classes);
/// The class names of a classes.json text; TrainError naming `what` when it is not one.
std::vector<std::string> parse_class_names(const std::string& text, const std::string& what);

}  // namespace unitrain
