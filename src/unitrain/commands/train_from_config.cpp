#include "unitrain/commands/train_from_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/checkpoint_options.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/model_shards.h"
#include "unitrain/checkpoint/model_weights.h"
#include "unitrain/checkpoint/safetensors.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/checkpoint/trainer_state_file.h"
#include "unitrain/commands/config_driven.h"
#include "unitrain/commands/init_weights.h"
#include "unitrain/core/error.h"
#include "unitrain/core/file_bytes.h"
#include "unitrain/core/memory.h"
#include "unitrain/core/save_signals.h"
#include "unitrain/core/unit_parts.h"
#include "unitrain/data/build_data.h"
#include "unitrain/data/loader.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/config/resume_config.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/engine/results/fit_conclusion.h"
#include "unitrain/engine/setup/run_device.h"
#include "unitrain/engine/setup/run_folder.h"
#include "unitrain/engine/setup/run_resume.h"
#include "unitrain/log/console.h"
#include "unitrain/log/console_tracker.h"
#include "unitrain/models/torchscript_export.h"
#include "unitrain/objective/objective_module.h"
#include "unitrain/objective/teacher.h"
#include "unitrain/parallel/dist_env.h"
#include "unitrain/parallel/tensor_parallel.h"

namespace unitrain {

namespace {

std::string yaml_list(const std::vector<double>& values) {
  return fmt::format("[{}]", fmt::join(values, ", "));  // shortest text that reads back exactly
}

/// `config` with the normalisation statistics computed from the train data written into
/// data.normalize.mean/std, so that the run's config.yaml (and every checkpoint's) holds them:
/// `unitrain export` applies them inside the exported model.
Config with_normalize_statistics(const Config& config, const NormalizeOptions& norm,
                                 const DataSplits& data) {
  if (data.normalize_mean.empty() || !norm.enabled) return config;
  Config out = config.clone();
  if (norm.mean.empty()) {
    out.set("data.normalize.mean", yaml_list(data.normalize_mean));
  }
  if (norm.stddev.empty()) {
    out.set("data.normalize.std", yaml_list(data.normalize_std));
  }
  return out;
}

/// The train data's largest token id (its info's max_token_id, where the dataset knows it)
/// against the model's vocab_size, before any weight is read: a tokenizer or token files that
/// are not the model's are named now, not at the first step.
void check_token_ids_fit(const Model& model, const DataSplits& data, const std::string& type) {
  const std::optional<int64_t> vocab = model.vocab_size();
  if (!vocab || !data.train) return;
  const std::map<std::string, int64_t> info = data.train->info();
  const auto largest = info.find("max_token_id");
  if (largest == info.end()) return;
  UT_CHECK(largest->second < *vocab, "data.train holds token id ", largest->second,
           ", but the model (model.type ", type, ") embeds ids below its vocab_size ", *vocab,
           ": the tokenizer (or token files) is not the model's; give the model folder's own "
           "tokenizer, or a model of the tokenizer's vocabulary");
}

/// The checkpoint `run` will resume from, as Trainer::fit finds it; "" for a new run.
std::string resume_dir(const RunSettings& run) {
  std::vector<std::string> skipped;  // the run warns of them when it resumes
  return resume_checkpoint(run, &skipped);
}

/// The shuffle of the data order a run continues (its random split's): the checkpoint it
/// resumes from (`resume`) records it (trainer_state.json data_order; runs started before
/// Feistel used Fisher-Yates); a new run uses the current one.
ShuffleAlgorithm resumed_shuffle(const std::string& resume) {
  return resume.empty() ? kCurrentShuffle : TrainerStateFile::read(resume).data_order;
}

/// The run's model and objective, built as `c` says (in parts under ZeRO 3 on several
/// processes, each checked against its share of the machine's memory), its weights initialised
/// unless `resume` names the checkpoint they come from; its size said.
std::shared_ptr<ObjectiveModule> build_run_module(const ConfigDriven& c, const std::string& resume,
                                                  const DataSplits& data) {
  // ZeRO 3 on several processes: each unit keeps this process's part of it from the moment it
  // is built (core/unit_parts.h), so that no process holds the whole model.
  std::optional<BuildInParts> in_parts;
  std::optional<int> built_in_parts;  // the world size, when built in parts
  const DistEnv env = read_dist_env();
  if (c.run.distributed.zero == 3 && env.world_size > 1) {
    in_parts.emplace(env.rank, env.world_size);
    built_in_parts = env.world_size;
  }
  // The job's processes on this machine build their models at once: each is checked against
  // its share of the machine's (or the cgroup's) memory.
  const MemoryShare share(env.local_world_size);
  // A resumed run's weights are its checkpoint's: model.init_from is not read (it may be gone
  // from a machine the run is requeued on).
  if (c.model_keys.init_from && !resume.empty() && !c.model_keys.lora) {
    log::info(fmt::format("model.init_from {}: not read, the run resumes from {}",
                          *c.model_keys.init_from, resume));
  }
  auto module = build_module(c, resume.empty(), [&](const Model& model) {
    check_token_ids_fit(model, data, c.model_keys.type);
  });
  in_parts.reset();
  int64_t params = 0;
  bool kept = false;  // a model that builds in parts (transformer_lm) did
  for (const auto& p : module->parameters()) {
    params += p.numel();
    kept = kept || kept_in_parts(p);
  }
  if (!kept) built_in_parts.reset();
  const ActivationCheckpointingOptions& ac = c.model_keys.activation_checkpointing;
  std::string recompute;
  if (ac.enabled) {
    recompute =
        ac.every == 1 ? "every block" : fmt::format("every {} blocks from the first", ac.every);
  }
  log::info(fmt::format("model {}: {} parameters{}{}", module->model_type(), params,
                        recompute.empty() ? "" : "; activation checkpointing: " + recompute,
                        built_in_parts ? fmt::format("; built in parts: this process keeps its "
                                                     "1/{} of each unit (distributed.zero: 3)",
                                                     *built_in_parts)
                                       : std::string()));
  return module;
}

/// A stop signal received once training was complete: the test split is not started, and the
/// exit status is a stop's (the same command resumes from the checkpoints and evaluates it).
void leave_the_test_split(const RunSettings& run, FitResult& fit) {
  const int sig = fit.signal_after_end;
  fit.exit_code = exit_code_after_signal(run, sig);
  const bool resumes = fit.exit_code == static_cast<int>(run.checkpoint.on_signal_exit_code);
  log::warn(fmt::format(
      "{} received after the last step: training is complete; the test split was not "
      "evaluated{}; exit {}",
      signal_name(sig), resumes ? ": run the same command to evaluate it" : "", fit.exit_code));
}

}  // namespace

ConfigRunResult train_from_config(const Config& raw_config) {
  const ConfigDriven raw = config_driven(raw_config);
  const std::string resume = resume_dir(raw.run);
  DataSplits data = build_data(raw.run.data, raw.run.seed, resumed_shuffle(resume));
  const Config config = with_normalize_statistics(raw_config, raw.data_keys.normalize, data);
  Trainer trainer(config);  // seeds torch before the model is built
  // Read again from the config the Trainer keeps (the measured statistics in it): its record of
  // reads is the one the unread-keys warning checks, and the model's keys count as read there.
  const ConfigDriven c = config_driven(config);
  // distributed.tensor_parallel: the model is built cut over this process's tensor group.
  // distributed.reproducible_chunks: its layers chunked, on one process too.
  const DistributedOptions& d = c.run.distributed;
  const int64_t chunks = d.reproducible_on() ? d.reproducible_chunks : 0;
  std::optional<tp::BuildScope> cut;
  if (d.tensor_parallel > 1 || chunks > 1) {
    cut.emplace(d.tensor_parallel > 1 ? trainer.tensor_group() : nullptr, chunks);
  }
  auto module = build_run_module(c, resume, data);
  cut.reset();
  if (const auto& teacher = module->teacher()) {
    int64_t frozen = 0;
    for (const auto& p : teacher->model()->parameters()) frozen += p.numel();
    const TeacherOptions& t = *c.objective_keys.teacher;
    log::info(fmt::format("teacher {}: {} parameters, frozen, weights {}", t.model_type, frozen,
                          t.weights.value_or("its own")));
  }
  ConfigRunResult result;
  result.fit = trainer.fit(*module, data.train, data.val);
  if (data.test && result.fit.signal_after_end != 0) {
    leave_the_test_split(c.run, result.fit);
  } else if (data.test && result.fit.signal == 0 && result.fit.paused.empty()) {
    result.test = trainer.test(*module, data.test);
  }
  return result;
}

}  // namespace unitrain
