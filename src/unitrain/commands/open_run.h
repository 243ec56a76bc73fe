#pragma once
// One way to open a trained run, for every command that reads one (eval, eval --text, export,
// generate): the run's config from its YAML or its folder, a checkpoint chosen and verified, the
// model built as the run built it (its own config.yaml) with that checkpoint's weights, and the
// run's tokenizer (RunText).
#include <cstdint>
#include <memory>
#include <string>

#include "unitrain/commands/config_driven.h"
#include "unitrain/core/config.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/config/run_text.h"

namespace unitrain {

class ObjectiveModule;
class Trainer;

/// A run's config as a command reads it.
struct RunSource {
  Config config;  ///< resolved (load_run_config), the overrides applied
  /// When `file` is a run folder that was started in another folder than the current one:
  /// " (FOLDER was started in ...: its config's relative paths are read from there; ...)",
  /// for the end of an error message; "" otherwise.
  std::string started_elsewhere;
};

/// `file`: a run's YAML, or a run folder (its config.yaml: the config it trained with, every
/// override it was given included, with run_dir = the folder as given, wherever the run was
/// started), with `overrides` applied after. ConfigError when a folder has no config.yaml.
RunSource read_run_source(const std::string& file, Overrides overrides);

/// A checkpoint of a run chosen, before its model is read.
struct ChosenCheckpoint {
  /// The config the checkpoint trained with (its config.yaml, today's defaults filled in), but
  /// for what a command may choose itself from the config given: data.test, data.loader,
  /// objective.metrics, train.device, train.threads, log, name and run_dir. Each other key of
  /// the given config that shapes the model or its inputs and differs is said, and the run's
  /// value used.
  Config config;
  ConfigDriven parts;  ///< config's sections, read once
  std::string choice;  ///< as given: best | last | a checkpoint folder
  std::string dir;     ///< the checkpoint folder `choice` named when it was chosen
  /// The run's Trainer, made from `config` before the model is built (its seed, threads and
  /// device settings applied as the run's were): what reads a callback's own weights
  /// (load_validated_weights) and evaluates.
  std::unique_ptr<Trainer> trainer;
  const char* command = "";  ///< who opens it, for messages ("eval", "export", "generate")

  ChosenCheckpoint();
  ChosenCheckpoint(ChosenCheckpoint&&) noexcept;
  ChosenCheckpoint& operator=(ChosenCheckpoint&&) noexcept;
  ~ChosenCheckpoint();
};

/// Chooses checkpoint `choice` (best | last | a checkpoint folder; verified) of the run
/// `given` names and reads the config it trained with. ConfigError naming --checkpoint when
/// there is none or it is damaged.
ChosenCheckpoint choose_checkpoint(const Config& given, const std::string& choice,
                                   const char* command);

/// A run opened: its chosen checkpoint, the model built and loaded.
struct OpenedRun : ChosenCheckpoint {
  std::shared_ptr<ObjectiveModule> module;  ///< on the CPU, as the checkpoint's tensors are
  int64_t step = 0;                         ///< the checkpoint's optimizer step

  /// The run's tokenizer and prompt format (engine/config/run_text.h).
  RunText text() const { return run_text(config); }
};

/// Builds the model of `chosen` as the run built it and loads the checkpoint's weights into it
/// (strict), as `weights` says: validated = the weights validation used (a callback's own,
/// e.g. the ema average; else the trained ones), trained = model.pt as trained. The checkpoint
/// is the one chosen (verified once, then read); a run training in the same folder meanwhile
/// may remove it (keep_last, `last` moving on): then the newest one `choice` names is read.
/// ConfigError when `weights` is neither or the checkpoint does not fit the model.
OpenedRun open_run(ChosenCheckpoint chosen, const std::string& weights);

/// choose_checkpoint, then open_run.
OpenedRun open_run(const Config& given, const std::string& choice, const std::string& weights,
                   const char* command);

}  // namespace unitrain
