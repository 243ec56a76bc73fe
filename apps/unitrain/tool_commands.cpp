// checkpoint: the tool for a run's checkpoints (tokenizer_command.cpp has `tokenizer`).
#include <iostream>
#include <map>

#include "commands.h"
#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/checkpoint_tools.h"
#include "unitrain/checkpoint/model_shards.h"
#include "unitrain/core/error.h"
#include "unitrain/log/console.h"

namespace unitrain::cli {
namespace {

class CheckpointCommand : public Subcommand {
 public:
  explicit CheckpointCommand(CLI::App& app)
      : Subcommand(app, "checkpoint",
                   "look at, check or merge a checkpoint: inspect DIR [--json] | "
                   "verify DIR | merge DIR --out NEW [--format checkpoint|safetensors]") {
    action_ = cli_->add_option("action", action_name_, "inspect, verify or merge")->required();
    cli_->add_option("dir", path_,
                     "a checkpoint folder (run_dir/checkpoints/step-<S>), or a run_dir or its "
                     "checkpoints/ folder (inspect and merge: its last checkpoint; verify: every "
                     "one)")
        ->required();
    cli_->add_flag("--json", json_, "inspect: one JSON object");
    cli_->add_option("--out", out_,
                     "merge: the new checkpoint folder, or safetensors file, to write (must not "
                     "exist)");
    format_ = cli_->add_option("--format", format_name_,
                               "merge: checkpoint (one optimizer.pt from a ZeRO 1/2 "
                               "checkpoint's partitions; one model.pt, and the ema average's "
                               "extra-ema.pt, from a ZeRO 3 checkpoint's parts) or safetensors "
                               "(the checkpoint's model as one .safetensors file)")
                  ->capture_default_str();
  }
  Choices choices() const override {
    return {{action_, {"inspect", "verify", "merge"}}, {format_, {"checkpoint", "safetensors"}}};
  }

  /// The exit code: verify gives kExitFailure when a checkpoint is invalid.
  int run() override {
    if (action_name_ == "inspect") {
      std::cout << inspect_checkpoint(path_, json_);
      return 0;
    }
    if (action_name_ == "verify") {
      std::string report;
      const int bad = verify_checkpoints(path_, report);
      std::cout << report;
      return bad == 0 ? 0 : kExitFailure;
    }
    if (action_name_ == "merge") return merge();
    throw ConfigError("checkpoint: unknown action '" + action_name_ +
                      "'; use inspect, verify or merge");
  }

 private:
  int merge() {
    if (out_.empty()) throw ConfigError("checkpoint merge: give --out NEW_DIR");
    const std::string written = merge_checkpoint(path_, out_, format_name_);
    const std::string merged =
        has_model_shards(written)
            ? std::string("the model's parts in one model.pt (torch.load reads it)") +
                  (CheckpointStore::has(written, std::string(checkpoint_files::kCallbackPrefix) +
                                                     checkpoint_files::kEmaEntry)
                       ? ", the ema average's in one extra-ema.pt"
                       : "")
            : "one optimizer.pt";
    log::info(format_name_ == "safetensors"
                  ? "wrote " + written + ": the checkpoint's model as safetensors"
                  : "wrote " + written + ": " + merged +
                        "; resume from it with --checkpoint.resume " + out_);
    return 0;
  }

  std::string action_name_, path_, out_, format_name_ = "checkpoint";
  bool json_ = false;
  CLI::Option* action_;
  CLI::Option* format_;
};

}  // namespace

const CommandFactory make_checkpoint_command = make_command<CheckpointCommand>;

}  // namespace unitrain::cli
