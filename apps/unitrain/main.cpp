// unitrain: the command line. Parses arguments and calls the library; nothing else.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>

#include "unitrain/checkpoint/checkpoint_tools.h"
#include "unitrain/core/cpu_budget.h"
#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/memory.h"
#include "unitrain/core/plugin.h"
#include "unitrain/core/registry.h"
#include "unitrain/data/tokenizer_trainer.h"
#include "unitrain/engine/bash_completion.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/engine/component_list.h"
#include "unitrain/engine/run_config.h"
#include "unitrain/engine/starter_config.h"
#include "unitrain/engine/train_from_config.h"
#include "unitrain/launch/launcher.h"
#include "unitrain/log/console.h"
#include "unitrain/log/console_tracker.h"
#include "unitrain/report/report_page.h"

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr size_t kNoLimit = std::string::npos;  // error_text: the whole message

struct ConfigArgs {
  std::string file;
  std::vector<std::string> plugins;
};

void add_config_args(CLI::App* cmd, ConfigArgs& args, bool required) {
  cmd->add_option("config", args.file, "the run's YAML file")->required(required);
  cmd->add_option("--plugin", args.plugins,
                  "a shared library (.so) registering more components; repeatable")
      ->allow_extra_args(false);  // one value per --plugin, so the config may follow it
  cmd->allow_extras();
  cmd->footer(
      "Any key of the config can be overridden after the file: --optimizer.lr 3e-4, "
      "--train.max_length '2 epochs', or --set model.args.sizes=[64,10]. "
      "Precedence: built-in defaults < YAML < command line.");
}

/// The config file with the command's overrides, then `more` override words.
unitrain::Config resolve(const ConfigArgs& args, const CLI::App* cmd,
                         const std::vector<std::string>& more = {}) {
  unitrain::register_builtins();
  for (const auto& p : args.plugins) unitrain::load_plugin(p);
  std::vector<std::string> words = cmd->remaining();
  words.insert(words.end(), more.begin(), more.end());
  return unitrain::load_run_config({args.file}, unitrain::parse_overrides(words));
}

std::string self_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw unitrain::TrainError("launch: cannot find the unitrain executable: " + ec.message());
  return p.string();
}

/// run_dir/logs of `train CONFIG [overrides]`, or "logs" when the config does not resolve
/// (the workers will report why).
std::string default_log_dir(const std::vector<std::string>& worker_args) {
  if (worker_args.size() < 2 || worker_args[0] != "train") return "logs";
  try {
    unitrain::register_builtins();
    std::vector<std::string> overrides(worker_args.begin() + 2, worker_args.end());
    return unitrain::load_run_config({worker_args[1]}, unitrain::parse_overrides(overrides))
               .get_string("run_dir") +
           "/logs";
  } catch (const std::exception&) {
    return "logs";
  }
}

std::vector<std::string> subcommand_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

/// The first word that is no option must name a subcommand: `unitrain trian` gets a suggestion.
void check_subcommand_word(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.rfind('-', 0) == 0) continue;  // the global options take no values
    const auto names = subcommand_names(app);
    if (std::find(names.begin(), names.end(), word) != names.end()) return;
    const std::string hint = unitrain::closest_match(word, names);
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw unitrain::ConfigError("unknown command '" + word + "'" +
                                (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                                " (commands: " + known + ")");
  }
}

/// `unitrain launch ...` whose worker command is not after `--`.
bool launch_without_separator(int argc, char** argv) {
  const auto end = argv + argc;
  const auto launch = std::find_if(argv + 1, end, [](const char* w) { return w[0] != '-'; });
  return launch != end && std::strcmp(*launch, "launch") == 0 &&
         std::none_of(launch, end, [](const char* w) { return std::strcmp(w, "--") == 0; });
}

/// `launch ... -- <command>`: the workers' command, word for word (CLI11 would read a value like
/// "[console, tensorboard]" as a list and split it); `argc` then ends before the "--".
std::vector<std::string> take_worker_command(int& argc, char** argv) {
  const auto end = argv + argc;
  const auto launch = std::find_if(argv + 1, end, [](const char* w) { return w[0] != '-'; });
  if (launch == end || std::strcmp(*launch, "launch") != 0) return {};
  const auto dashes = std::find_if(launch, end, [](const char* w) { return std::strcmp(w, "--") == 0; });
  if (dashes == end) return {};
  std::vector<std::string> command(dashes + 1, end);
  argc = static_cast<int>(dashes - argv);
  return command;
}

constexpr const char* kLaunchSeparatorHint =
    "launch: put the workers' command after --, e.g. unitrain launch --nproc-per-node 2 -- "
    "train run.yaml --optimizer.lr 1e-3 (without --, its options would be read as launch's)";

/// Values to suggest for an option or positional, beside its declaration (for completion).
using Choices = std::map<const CLI::Option*, std::vector<std::string>>;

/// What `unitrain completion` completes, read from the app's own declarations.
unitrain::CompletionSpec completion_spec(CLI::App& app, const Choices& choices,
                                         const CLI::App* separated_command) {
  auto names_of = [](const CLI::Option* o) {
    std::vector<std::string> names;
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    for (const auto& s : o->get_snames()) names.push_back("-" + s);
    return names;
  };
  unitrain::CompletionSpec spec;
  for (const auto* o : app.get_options()) {
    for (const auto& n : names_of(o)) spec.global_options.push_back(n);
  }
  for (auto* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    unitrain::CompletionCommand cmd;
    cmd.name = sub->get_name();
    cmd.config_overrides = sub->get_allow_extras();
    cmd.command_after_separator = sub == separated_command;
    for (const auto* o : sub->get_options()) {
      const auto it = choices.find(o);
      const std::vector<std::string> values =
          it == choices.end() ? std::vector<std::string>{} : it->second;
      if (!o->nonpositional()) {
        if (!values.empty()) cmd.positional_choices = values;
        cmd.positional_paths |= values.empty() && o->get_type_name() == "TEXT";
        continue;
      }
      for (const auto& n : names_of(o)) {
        const bool path = values.empty() && o->get_type_name() == "TEXT";
        cmd.options.push_back({n, o->get_expected_max() != 0, path, values});
      }
    }
    spec.commands.push_back(cmd);
  }
  spec.config_keys = unitrain::config_key_paths(*unitrain::run_schema());
  return spec;
}

/// `unitrain checkpoint ACTION DIR`: the exit code (verify: 1 when a checkpoint is invalid).
int run_checkpoint_tool(const std::string& action, const std::string& path, bool json,
                        const std::string& out, const std::string& format) {
  if (action == "inspect") {
    std::cout << unitrain::inspect_checkpoint(path, json);
    return 0;
  }
  if (action == "verify") {
    std::string report;
    const int bad = unitrain::verify_checkpoints(path, report);
    std::cout << report;
    return bad == 0 ? 0 : kExitFailure;
  }
  if (action == "merge") {
    if (out.empty()) throw unitrain::ConfigError("checkpoint merge: give --out NEW_DIR");
    const std::string written = unitrain::merge_checkpoint(path, out, format);
    unitrain::log::info(format == "safetensors"
                            ? "wrote " + written + ": the checkpoint's model as safetensors"
                            : "wrote " + written +
                                  ": one optimizer.pt; resume from it with --checkpoint.resume " +
                                  out);
    return 0;
  }
  throw unitrain::ConfigError("checkpoint: unknown action '" + action +
                              "'; use inspect, verify or merge");
}

/// `unitrain tokenizer ACTION ...`: the exit code.
int run_tokenizer_tool(const std::string& action, const unitrain::TokenizerTrainOptions& options) {
  if (action != "train") {
    throw unitrain::ConfigError("tokenizer: unknown action '" + action + "'; use train");
  }
  const std::string model = unitrain::train_tokenizer(options);
  unitrain::log::info("wrote " + model + " and " + options.out +
                      ".vocab; use it with data.<split>.args.tokenizer: " + model);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything allocates much: training steps reuse freed memory instead of mapping it
  // anew each step (docs/performance.md, "Memory"). UNITRAIN_MALLOC=system turns it off.
  if (const std::string note = unitrain::keep_freed_memory(); !note.empty()) {
    unitrain::log::file_only(note);  // train.log's first line
  }
  // Other programs' CPU load is measured from here to the start of training (threads: auto).
  unitrain::startup_load_probe();
  CLI::App app{"unitrain: train any LibTorch model from a YAML file or a few lines of C++"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "unitrain 0.1.0");

  ConfigArgs train_args, config_args, list_args;
  CLI::App* train = app.add_subcommand("train", "train the model a YAML file describes");
  add_config_args(train, train_args, true);
  bool train_profile = false;
  train->add_flag("--profile", train_profile,
                  "profile the training step (profile.enabled: true): a per-phase table at the end, "
                  "run_dir/profile/summary.json and a Chrome trace");

  CLI::App* config = app.add_subcommand(
      "config", "print the fully resolved config (every default filled in) and exit");
  add_config_args(config, config_args, false);
  bool reference = false;
  config->add_flag("--reference", reference,
                   "print the reference of every key and component as Markdown (docs/config.md)");

  ConfigArgs eval_args;
  std::string eval_checkpoint = "best", eval_split = "val";
  CLI::App* eval = app.add_subcommand(
      "eval", "evaluate a checkpoint on the val or test split; writes run_dir/results/<split>.json");
  add_config_args(eval, eval_args, true);
  eval->add_option("--checkpoint", eval_checkpoint,
                   "best, last, or a checkpoint folder (run_dir/checkpoints/step-<S>); default best, "
                   "else last when the run kept no best")
      ->capture_default_str();
  eval->add_option("--split", eval_split, "val or test")->capture_default_str();

  ConfigArgs export_args;
  std::string export_checkpoint = "last", export_format = "state_dict", export_out;
  CLI::App* exp = app.add_subcommand(
      "export",
      "write a checkpoint's model as a state dict (torch.load), safetensors or TorchScript "
      "(torch.jit.load)");
  add_config_args(exp, export_args, true);
  exp->add_option("--checkpoint", export_checkpoint, "best, last, or a checkpoint folder")
      ->capture_default_str();
  exp->add_option("--format", export_format,
                  "state_dict (a dict of tensors named as the model's state_dict()), safetensors "
                  "(the same tensors, for Hugging Face's safetensors) or torchscript (built-in and "
                  "TorchScript models)")
      ->capture_default_str();
  exp->add_option("--out", export_out, "the file to write")->required();

  unitrain::LaunchOptions launch_options;
  std::string launch_log_dir;
  bool launch_exec = false;
  CLI::App* launch = app.add_subcommand(
      "launch",
      "start this machine's workers of a distributed run, e.g. unitrain launch --nproc-per-node 2 "
      "-- train run.yaml [overrides]");
  launch->add_option("--nproc-per-node", launch_options.nproc_per_node, "workers on this machine")
      ->capture_default_str();
  launch->add_option("--nnodes", launch_options.nnodes, "machines in the run")->capture_default_str();
  launch->add_option("--node-rank", launch_options.node_rank, "this machine's index, 0..nnodes-1")
      ->capture_default_str();
  launch->add_option("--master-addr", launch_options.master_addr,
                     "address of machine 0 (it hosts the rendezvous)")
      ->capture_default_str();
  launch->add_option("--master-port", launch_options.master_port, "port of the rendezvous")
      ->capture_default_str();
  launch->add_option("--max-restarts", launch_options.max_restarts,
                     "restart the workers this many times after a failure (they resume from the "
                     "last checkpoint)")
      ->capture_default_str();
  launch->add_option("--grace-period", launch_options.grace_seconds,
                     "seconds between SIGTERM and SIGKILL when ending the other workers")
      ->capture_default_str();
  launch->add_option("--log-dir", launch_log_dir,
                     "where rank-<R>.log files go; default run_dir/logs of the train config");
  launch->add_flag("--exec", launch_exec,
                   "run the command after -- as a program, not as a unitrain subcommand");
  std::vector<std::string> launch_command;
  launch->add_option("command", launch_command,
                     "after --: each worker's command, e.g. -- train run.yaml --optimizer.lr 1e-3");

  CLI::App* list = app.add_subcommand(
      "list", "list every registered component by kind; with a kind, also their arguments");
  list->add_option("--plugin", list_args.plugins, "a plugin (.so) to load first; repeatable")
      ->allow_extra_args(false);
  std::string list_kind;
  CLI::Option* list_kind_option = list->add_option(
      "kind", list_kind,
      "a kind (model, dataset, loss, metric, ...; plural too): its components with each "
      "argument's type, default and meaning");

  unitrain::StarterOptions init_options;
  std::string init_out = "run.yaml";
  CLI::App* init = app.add_subcommand(
      "init", "write a commented starter config for a task, filled in from your data");
  CLI::Option* init_task =
      init->add_option("--task", init_options.task,
                       "classification or regression (CSV, MLP), image (IDX, CNN), language-model "
                       "(text, char-level transformer)")
          ->capture_default_str();
  init->add_option("--data", init_options.data,
                   "a CSV, IDX images or text file; default: the packaged example data");
  init->add_option("--target", init_options.target,
                   "the CSV column to predict (name, or index without a header); default: the "
                   "last");
  init->add_option("--out", init_out, "the file to write; an existing file is never overwritten")
      ->capture_default_str();

  std::vector<std::string> report_dirs;
  std::string report_out;
  CLI::App* report = app.add_subcommand(
      "report", "write one self-contained HTML page of charts and tables about one or more runs");
  report->add_option("run_dir", report_dirs, "run folders (a config's run_dir, e.g. runs/<name>)")
      ->required();
  report->add_option("-o,--out", report_out,
                     "the HTML file to write; default RUN_DIR/report.html for one run, "
                     "report.html for several");

  std::string checkpoint_action, checkpoint_path, checkpoint_out, checkpoint_format = "checkpoint";
  bool checkpoint_json = false;
  CLI::App* checkpoint = app.add_subcommand(
      "checkpoint",
      "look at, check or merge a checkpoint: inspect DIR [--json] | verify DIR | merge DIR --out "
      "NEW [--format checkpoint|safetensors]");
  CLI::Option* checkpoint_action_option =
      checkpoint->add_option("action", checkpoint_action, "inspect, verify or merge")->required();
  checkpoint
      ->add_option("dir", checkpoint_path,
                   "a checkpoint folder (run_dir/checkpoints/step-<S>), or a run_dir or its "
                   "checkpoints/ folder (inspect and merge: its last checkpoint; verify: every one)")
      ->required();
  checkpoint->add_flag("--json", checkpoint_json, "inspect: one JSON object");
  checkpoint->add_option("--out", checkpoint_out,
                         "merge: the new checkpoint folder, or safetensors file, to write (must "
                         "not exist)");
  checkpoint
      ->add_option("--format", checkpoint_format,
                   "merge: checkpoint (one optimizer.pt from a ZeRO checkpoint's partitions) or "
                   "safetensors (the checkpoint's model as one .safetensors file)")
      ->capture_default_str();

  unitrain::TokenizerTrainOptions tokenizer_options;
  std::string tokenizer_action;
  std::vector<std::string> text_formats;
  for (const auto& [name, value] : unitrain::kTextFormatNames) text_formats.push_back(name);
  CLI::App* tokenizer = app.add_subcommand(
      "tokenizer",
      "train a SentencePiece tokenizer for the text dataset: train --input FILE --vocab-size N "
      "[--out PREFIX]");
  CLI::Option* tokenizer_action_option =
      tokenizer->add_option("action", tokenizer_action, "train")->required();
  tokenizer
      ->add_option("--input", tokenizer_options.inputs,
                   "a text file (.gz too): one text a line, or JSON Lines; repeatable")
      ->required()
      ->allow_extra_args(false);
  tokenizer
      ->add_option("--vocab-size", tokenizer_options.vocab_size,
                   "pieces in the model, <unk> <s> </s> <pad> (ids 0-3) included")
      ->required();
  CLI::Option* tokenizer_type =
      tokenizer
          ->add_option("--model-type", tokenizer_options.model_type, "unigram, bpe, char or word")
          ->capture_default_str();
  tokenizer->add_option("--out", tokenizer_options.out, "writes OUT.model and OUT.vocab")
      ->capture_default_str();
  CLI::Option* tokenizer_format_option =
      tokenizer
          ->add_option("--format", tokenizer_options.format,
                       "lines, jsonl, or auto (jsonl for names ending .jsonl/.json)")
          ->transform(CLI::CheckedTransformer(std::map<std::string, unitrain::TextFormat>(
              unitrain::kTextFormatNames.begin(), unitrain::kTextFormatNames.end())))
          ->default_str("auto");
  tokenizer->add_option("--field", tokenizer_options.field, "jsonl: the key holding the text")
      ->capture_default_str();
  tokenizer
      ->add_option("--character-coverage", tokenizer_options.character_coverage,
                   "share of the text's characters the pieces cover (rarer ones become <unk>); "
                   "1.0 for small alphabets")
      ->capture_default_str();
  tokenizer->add_flag("--force", tokenizer_options.force, "replace an existing OUT.model/.vocab");

  std::string completion_shell;
  CLI::App* completion = app.add_subcommand(
      "completion", "print a shell completion script: source <(unitrain completion bash)");
  CLI::Option* completion_shell_option =
      completion->add_option("shell", completion_shell, "bash")->required();

  Choices choices = {{init_task, unitrain::starter_tasks()},
                     {completion_shell_option, {"bash"}},
                     {eval->get_option("--split"), {"val", "test"}},
                     {exp->get_option("--format"), {"state_dict", "safetensors", "torchscript"}},
                     {checkpoint->get_option("--format"), {"checkpoint", "safetensors"}},
                     {checkpoint_action_option, {"inspect", "verify", "merge"}},
                     {tokenizer_action_option, {"train"}},
                     {tokenizer_type, unitrain::kTokenizerModelTypes},
                     {tokenizer_format_option, text_formats}};

  const int all_words = argc;
  const std::vector<std::string> worker_command = take_worker_command(argc, argv);
  try {
    check_subcommand_word(app, argc, argv);
    app.parse(argc, argv);
  } catch (const unitrain::ConfigError& e) {
    unitrain::log::error(e.what());
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0 && launch_without_separator(all_words, argv)) {
      unitrain::log::error(std::string(e.what()) + "\n" + kLaunchSeparatorHint);
      return kExitUsage;
    }
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  try {
    if (*launch) {
      std::vector<std::string> worker = worker_command;
      // Words where launch's options go, with no -- before them.
      if (!launch_command.empty()) {
        throw unitrain::ConfigError(kLaunchSeparatorHint);
      }
      if (worker.empty()) {
        throw unitrain::ConfigError(
            "launch: give the workers' command after --, e.g. unitrain launch --nproc-per-node 2 "
            "-- train run.yaml");
      }
      launch_options.log_dir = !launch_log_dir.empty() ? launch_log_dir
                               : launch_exec           ? "logs"
                                                       : default_log_dir(worker);
      if (!launch_exec) worker.insert(worker.begin(), self_path());
      launch_options.command = worker;
      return unitrain::launch(launch_options);
    }
    if (*train) {
      const int signal = unitrain::run_config(resolve(
          train_args, train,
          train_profile ? std::vector<std::string>{"--profile.enabled", "true"}
                        : std::vector<std::string>{})).fit.signal;
      if (signal != 0) return 128 + signal;  // stopped by SIGINT/SIGTERM after a checkpoint
    } else if (*eval) {
      const unitrain::Config cfg = resolve(eval_args, eval);
      std::string choice = eval_checkpoint;
      // The default `best` falls back to `last` when the run tracked no best metric.
      if (eval->count("--checkpoint") == 0 &&
          !std::filesystem::exists(cfg.get_string("run_dir") + "/checkpoints/best")) {
        choice = "last";
      }
      auto r = unitrain::evaluate_checkpoint(cfg, choice, eval_split);
      std::string line = unitrain::detail::concat(r.split, " at step ", r.step, ":");
      for (const auto& [k, v] : r.metrics) line += " " + k + " " + unitrain::format_metric(v);
      unitrain::log::info(line);
      unitrain::log::info("results: " + r.results_file);
    } else if (*exp) {
      const std::string dir = unitrain::export_checkpoint(resolve(export_args, exp), export_checkpoint,
                                                          export_format, export_out);
      unitrain::log::info("exported " + dir + " as " + export_format + " to " + export_out);
    } else if (*config) {
      if (reference) {
        unitrain::register_builtins();
        for (const auto& p : config_args.plugins) unitrain::load_plugin(p);
        std::cout << unitrain::config_reference_markdown();
      } else {
        if (config_args.file.empty()) throw unitrain::ConfigError("config: give a YAML file (or --reference)");
        std::cout << resolve(config_args, config).dump();
      }
    } else if (*list) {
      unitrain::register_builtins();
      for (const auto& p : list_args.plugins) unitrain::load_plugin(p);
      std::cout << (list_kind.empty() ? unitrain::component_list()
                                      : unitrain::component_list(list_kind));
    } else if (*init) {
      unitrain::write_starter_config(init_options, init_out);
      unitrain::log::info("wrote " + init_out + "; train it with: unitrain train " + init_out);
    } else if (*report) {
      unitrain::log::info("wrote " + unitrain::report::write_report(report_dirs, report_out));
    } else if (*checkpoint) {
      return run_checkpoint_tool(checkpoint_action, checkpoint_path, checkpoint_json,
                                 checkpoint_out, checkpoint_format);
    } else if (*tokenizer) {
      return run_tokenizer_tool(tokenizer_action, tokenizer_options);
    } else if (*completion) {
      if (completion_shell != "bash") {
        throw unitrain::ConfigError("completion: only bash is supported, got '" + completion_shell +
                                    "'");
      }
      unitrain::register_builtins();
      choices[list_kind_option] = unitrain::catalog::kinds();
      std::cout << unitrain::bash_completion_script(completion_spec(app, choices, launch));
    }
  } catch (const unitrain::ConfigError& e) {
    unitrain::log::error(unitrain::error_text(e, kNoLimit));
    return kExitUsage;
  } catch (const std::exception& e) {  // a c10::Error here would print a C++ backtrace
    unitrain::log::error(unitrain::error_text(e, kNoLimit));
    return kExitFailure;
  }
  return 0;
}
