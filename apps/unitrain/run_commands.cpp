// train, eval and export: what a run's config drives.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "command_line.h"
#include "commands.h"
#include "unitrain/commands/evaluate.h"
#include "unitrain/commands/export.h"
#include "unitrain/commands/text_perplexity.h"
#include "unitrain/commands/train_from_config.h"
#include "unitrain/core/error.h"
#include "unitrain/core/memory.h"
#include "unitrain/core/save_signals.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/engine/loop/stop_signal.h"
#include "unitrain/log/console.h"
#include "unitrain/log/console_tracker.h"

namespace unitrain::cli {
namespace {

class TrainCommand : public Subcommand {
 public:
  explicit TrainCommand(CLI::App& app)
      : Subcommand(app, "train", "train the model a YAML file describes") {
    add_config_args(cli_, args_, true);
    cli_->add_flag("--profile", profile_,
                   "profile the training step (profile.enabled: true): a per-phase table at the "
                   "end, run_dir/profile/summary.json and a Chrome trace");
  }

  int run() override {
    const std::vector<std::string> more =
        profile_ ? std::vector<std::string>{"--profile.enabled", "true"}
                 : std::vector<std::string>{};
    const Config config = resolve(args_, cli_, more);
    StopSignalGuard::set_hold_exit_code(
        int(config.at("checkpoint").at("on_signal").get_int("exit_code")));
    // distributed.zero: 3 is chosen to fit a model in less memory: freed memory goes back to
    // the kernel rather than staying for the next step (main kept it; core/memory.h).
    if (config.at("distributed").get_int("zero") == 3) {
      if (const std::string note = give_back_freed_memory(); !note.empty()) log::file_only(note);
    }
    const int code = train_from_config(config).fit.exit_code;
    if (const int sig = StopSignalGuard::received(); sig != 0 && code == 0) {
      log::info(signal_name(sig) + " received as the run ended: it is complete, nothing to resume");
    }
    return code;
  }

  void take_stop_signals() override {
    std::vector<int> all;
    for (const SaveSignal& s : save_signals()) all.push_back(s.number);
    StopSignalGuard::hold(all);
  }

 private:
  ConfigArgs args_;
  bool profile_ = false;
};

/// --weights of eval and export.
CLI::Option* add_weights_option(CLI::App* cli, std::string& value) {
  return cli
      ->add_option("--weights", value,
                   "validated (the weights validation used, so the metric that chose the "
                   "checkpoint is reproduced: the ema callback's average when it evaluates with "
                   "it) or trained (model.pt as trained)")
      ->capture_default_str();
}

class EvalCommand : public Subcommand {
 public:
  explicit EvalCommand(CLI::App& app)
      : Subcommand(app, "eval",
                   "evaluate a checkpoint on the val or test split; writes "
                   "run_dir/results/<split>.json") {
    add_config_args(cli_, args_, true);
    cli_->add_option("--checkpoint", checkpoint_,
                     "best, last, or a checkpoint folder (run_dir/checkpoints/step-<S>); default "
                     "best, else last when the run kept no best")
        ->capture_default_str();
    split_ = cli_->add_option("--split", split_name_, "val or test")->capture_default_str();
    weights_ = add_weights_option(cli_, weights_name_);
    cli_->add_option("--text", text_,
                     "a language model's perplexity on this text file instead (one text a line; "
                     "writes run_dir/results/perplexity.json)");
    cli_->add_option("--tokenizer", tokenizer_, "--text: the tokenizer (default: the run's)");
    cli_->add_option("--window", window_,
                     "--text: tokens of context per window (0 = the model's longest)")
        ->capture_default_str()
        ->check(at_least(0));
  }
  Choices choices() const override {
    return {{split_, {"val", "test"}}, {weights_, {"validated", "trained"}}};
  }

  int run() override {
    const Config cfg = resolve(args_, cli_);
    if (!text_.empty()) return perplexity(cfg);
    std::string choice = checkpoint_;
    // The default `best` falls back to `last` when the run tracked no best metric.
    if (cli_->count("--checkpoint") == 0 &&
        !std::filesystem::exists(RunSettings::from_config(cfg).run_dir + "/checkpoints/best")) {
      choice = "last";
    }
    const auto r = evaluate_checkpoint(cfg, choice, split_name_, weights_name_);
    std::string line = detail::concat(r.split, " at step ", r.step, ":");
    for (const auto& [k, v] : r.metrics) line += " " + k + " " + format_metric(v);
    // The metrics are the command's product (stdout); where they were saved is a diagnostic.
    std::cout << line << '\n';
    if (r.classes) {
      std::cout << "per class:\n";
      for (const std::string& l : r.classes->lines()) std::cout << "  " << l << '\n';
    }
    std::cout << std::flush;
    log::info("results: " + r.results_file);
    return 0;
  }

 private:
  int perplexity(const Config& cfg) {
    const std::string choice = cli_->count("--checkpoint") == 0 ? "last" : checkpoint_;
    const PerplexityResult r = text_perplexity(cfg, choice, text_, tokenizer_, window_);
    std::cout << fmt::format(
                     "{}: perplexity {:.4f} (mean NLL {:.4f} nats) over {} tokens in {} "
                     "windows, checkpoint {}\n",
                     text_, r.perplexity, r.mean_nll, r.tokens, r.windows, r.checkpoint)
              << std::flush;
    log::info("results: " + r.results_file);
    return 0;
  }

  ConfigArgs args_;
  std::string text_, tokenizer_;
  int64_t window_ = 0;
  std::string checkpoint_ = "best", split_name_ = "val", weights_name_ = "validated";
  CLI::Option* split_;
  CLI::Option* weights_;
};

class ExportCommand : public Subcommand {
 public:
  explicit ExportCommand(CLI::App& app)
      : Subcommand(app, "export",
                   "write a checkpoint's model as a state dict (torch.load), "
                   "safetensors or TorchScript (torch.jit.load)") {
    add_config_args(cli_, args_, true);
    cli_->add_option("--checkpoint", checkpoint_, "best, last, or a checkpoint folder")
        ->capture_default_str();
    format_ = cli_->add_option("--format", format_name_,
                               "state_dict (a dict of tensors named as the model's state_dict()), "
                               "safetensors (the same tensors, for Hugging Face's safetensors), "
                               "torchscript (built-in and TorchScript models) or hf (gpt2 and "
                               "llama: a Hugging Face model folder)")
                  ->capture_default_str();
    cli_->add_option("--out", out_, "the file to write (--format hf: the folder)")->required();
    cli_->add_option("--max-shard-size", max_shard_mb_,
                     "--format hf: weights past this many MB go in shards with an index "
                     "(Hugging Face's default: 5000)")
        ->capture_default_str()
        ->check(positive());
    cli_->add_flag("--merge", merge_,
                   "--format hf of a LoRA run (model.lora): the model with its adapters merged "
                   "into the weights, a Hugging Face folder (default: PEFT's adapter folder)");
    weights_ = add_weights_option(cli_, weights_name_);
  }
  Choices choices() const override {
    return {{format_, {"state_dict", "safetensors", "torchscript", "hf"}},
            {weights_, {"validated", "trained"}}};
  }

  int run() override {
    const std::string dir =
        export_checkpoint(resolve(args_, cli_), checkpoint_, format_name_, out_, weights_name_,
                          uint64_t(max_shard_mb_ * 1'000'000.0), merge_);
    log::info("exported " + dir + " as " + format_name_ + " to " + out_);
    return 0;
  }

 private:
  ConfigArgs args_;
  std::string checkpoint_ = "last", format_name_ = "state_dict", out_, weights_name_ = "validated";
  double max_shard_mb_ = 5000;
  bool merge_ = false;
  CLI::Option* format_;
  CLI::Option* weights_;
};

}  // namespace

const CommandFactory make_train_command = make_command<TrainCommand>;
const CommandFactory make_eval_command = make_command<EvalCommand>;
const CommandFactory make_export_command = make_command<ExportCommand>;

}  // namespace unitrain::cli
