#include "unitrain/commands/evaluate.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/trainer_state_file.h"
#include "unitrain/commands/open_run.h"
#include "unitrain/core/atomic_file.h"
#include "unitrain/core/error.h"
#include "unitrain/data/loader.h"
#include "unitrain/engine/setup/run_device.h"
#include "unitrain/engine/setup/run_folder.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {

std::vector<std::string> checkpoint_class_names(const std::string& dir) {
  if (!CheckpointStore::has(dir, checkpoint_files::kClasses)) return {};
  const std::vector<char> bytes = CheckpointStore::read(dir, checkpoint_files::kClasses);
  return parse_class_names(std::string(bytes.begin(), bytes.end()),
                           dir + "/" + checkpoint_files::kClasses);
}

EvalResult evaluate_checkpoint(const Config& given, const std::string& checkpoint,
                               const std::string& split, const std::string& weights) {
  ChosenCheckpoint chosen = choose_checkpoint(given, checkpoint, "eval");
  UT_CHECK(split == "val" || split == "test", "--split ", split, ": give val or test");
  // A bad split is said before the model is read; the val split is the one it trained with.
  const RunSettings& run = chosen.parts.run;
  DataSplits data = build_data(run.data, run.seed, TrainerStateFile::read(chosen.dir).data_order);
  DatasetPtr dataset = split == "val" ? data.val : data.test;
  UT_CHECK(dataset != nullptr, "--split ", split, ": the config has no ", split, " data (set ",
           split == "val" ? "data.val or data.validation_ratio" : "data.test", ")");
  OpenedRun opened = open_run(std::move(chosen), weights);
  EvalResult result;
  result.split = split;
  result.checkpoint = opened.dir;
  result.step = opened.step;
  // Evaluated on the run's device (train.device), the checkpoint's CPU tensors moved there.
  ObjectiveModule& module = *opened.module;
  module.to(resolve_device(opened.parts.run.train.device, 0));
  result.metrics = opened.trainer->evaluate(
      module, dataset, split == "val" ? EvalSplit::Val : EvalSplit::Test, split);

  nlohmann::json out;
  out["split"] = split;
  out["checkpoint"] = std::filesystem::absolute(opened.dir).lexically_normal().string();
  out["step"] = result.step;
  out["examples"] = dataset->size();
  for (const auto& [k, v] : result.metrics) out["metrics"][k] = v;
  const Loader loader(dataset, opened.parts.run.loader.in_order(), 0, "data." + split);
  result.classes = class_results(module, loader, checkpoint_class_names(opened.dir));
  if (result.classes) out.update(nlohmann::json::parse(result.classes->json()));
  const std::string results_dir = opened.parts.run.run_dir + "/results";
  prepare_writable_dir(results_dir);
  result.results_file = results_dir + "/" + split + ".json";
  write_file_atomic(result.results_file, out.dump(1) + "\n");
  return result;
}

}  // namespace unitrain
