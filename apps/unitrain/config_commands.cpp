// config, list and init: writing and reading configs, and the components they name.
#include <iostream>

#include "commands.h"
#include "starter_config.h"
#include "unitrain/core/error.h"
#include "unitrain/core/registry.h"
#include "unitrain/engine/config/component_list.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/log/console.h"

namespace unitrain::cli {
namespace {

class ConfigCommand : public Subcommand {
 public:
  explicit ConfigCommand(CLI::App& app)
      : Subcommand(app, "config",
                   "print the fully resolved config (every default filled in) and exit") {
    add_config_args(cli_, args_, false);
    cli_->add_flag("--reference", reference_,
                   "print the reference of every key and component as Markdown (docs/config.md)");
  }

  int run() override {
    if (reference_) {
      load_components(args_.plugins);
      std::cout << config_reference_markdown();
      return 0;
    }
    if (args_.file.empty()) throw ConfigError("config: give a YAML file (or --reference)");
    std::cout << resolve(args_, cli_).dump();
    return 0;
  }

 private:
  ConfigArgs args_;
  bool reference_ = false;
};

class ListCommand : public Subcommand {
 public:
  explicit ListCommand(CLI::App& app)
      : Subcommand(app, "list",
                   "list every registered component by kind; with a kind, also their arguments") {
    cli_->add_option("--plugin", plugins_, "a plugin (.so) to load first; repeatable")
        ->allow_extra_args(false);
    kind_option_ = cli_->add_option(
        "kind", kind_,
        "a kind (model, dataset, loss, metric, ...; plural too): its components with each "
        "argument's type, default and meaning");
  }
  Choices choices() const override { return {{kind_option_, catalog::kinds()}}; }

  int run() override {
    load_components(plugins_);
    std::cout << (kind_.empty() ? component_list() : component_list(kind_));
    return 0;
  }

 private:
  std::vector<std::string> plugins_;
  std::string kind_;
  CLI::Option* kind_option_;
};

class InitCommand : public Subcommand {
 public:
  explicit InitCommand(CLI::App& app)
      : Subcommand(app, "init",
                   "write a commented starter config for a task, filled in from your data") {
    task_ = cli_->add_option("--task", options_.task,
                             "classification or regression (CSV, MLP), image (IDX, CNN), "
                             "language-model (text, char-level transformer)")
                ->capture_default_str();
    cli_->add_option("--data", options_.data,
                     "a CSV, IDX images or text file; default: the packaged example data");
    cli_->add_option("--target", options_.target,
                     "the CSV column to predict (name, or index without a header); default: the "
                     "last");
    cli_->add_option("--out", out_, "the file to write; an existing file is never overwritten")
        ->capture_default_str();
  }
  Choices choices() const override { return {{task_, starter_tasks()}}; }

  int run() override {
    write_starter_config(options_, out_);
    log::info("wrote " + out_ + "; train it with: unitrain train " + out_);
    return 0;
  }

 private:
  StarterOptions options_;
  std::string out_ = "run.yaml";
  CLI::Option* task_;
};

}  // namespace

const CommandFactory make_config_command = make_command<ConfigCommand>;
const CommandFactory make_list_command = make_command<ListCommand>;
const CommandFactory make_init_command = make_command<InitCommand>;

}  // namespace unitrain::cli
