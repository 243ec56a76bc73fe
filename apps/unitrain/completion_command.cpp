// completion: a shell completion script, read from the commands' own declarations.
#include <iostream>

#include "bash_completion.h"
#include "commands.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/engine/config/load_config.h"

namespace unitrain::cli {
namespace {

std::vector<std::string> option_names(const CLI::Option* o) {
  std::vector<std::string> names;
  for (const auto& l : o->get_lnames()) names.push_back("--" + l);
  for (const auto& s : o->get_snames()) names.push_back("-" + s);
  return names;
}

/// One subcommand as completion sees it: its options, positionals and suggested values.
CompletionCommand completion_command(const CLI::App& sub, const Choices& choices,
                                     bool command_after_separator) {
  CompletionCommand cmd;
  cmd.name = sub.get_name();
  cmd.config_overrides = sub.get_allow_extras();
  cmd.command_after_separator = command_after_separator;
  for (const auto* o : sub.get_options()) {
    const auto it = choices.find(o);
    const std::vector<std::string> values =
        it == choices.end() ? std::vector<std::string>{} : it->second;
    const bool path = values.empty() && o->get_type_name() == "TEXT";
    if (!o->nonpositional()) {
      if (!values.empty()) cmd.positional_choices = values;
      cmd.positional_paths |= path;
      continue;
    }
    for (const auto& n : option_names(o)) {
      cmd.options.push_back({n, o->get_expected_max() != 0, path, values});
    }
  }
  return cmd;
}

/// What `unitrain completion` completes, read from the app's own declarations.
CompletionSpec completion_spec(const CLI::App& app, const Commands& commands) {
  CompletionSpec spec;
  for (const auto* o : app.get_options()) {
    for (const auto& n : option_names(o)) spec.global_options.push_back(n);
  }
  for (const auto& command : commands) {
    spec.commands.push_back(completion_command(*command->cli(), command->choices(),
                                               command->takes_command_after_separator()));
    for (const auto& [key, values] : command->override_keys())
      spec.commands.back().own_keys.push_back("--" + key);
  }
  spec.config_keys = config_key_paths(*run_schema());
  return spec;
}

class ShellCompletionCommand : public Subcommand {
 public:
  ShellCompletionCommand(CLI::App& app, const Commands& commands)
      : Subcommand(app, "completion",
                   "print a shell completion script: source <(unitrain completion bash)"),
        commands_(commands) {
    shell_option_ = cli_->add_option("shell", shell_, "bash")->required();
  }
  Choices choices() const override { return {{shell_option_, {"bash"}}}; }

  int run() override {
    if (shell_ != "bash") {
      throw ConfigError("completion: only bash is supported, got '" + shell_ + "'");
    }
    register_builtins();  // the components' names and arguments complete config keys
    std::cout << bash_completion_script(completion_spec(*cli_->get_parent(), commands_));
    return 0;
  }

 private:
  const Commands& commands_;
  std::string shell_;
  CLI::Option* shell_option_;
};

}  // namespace

std::unique_ptr<Command> make_completion_command(CLI::App& app, const Commands& commands) {
  return std::make_unique<ShellCompletionCommand>(app, commands);
}

}  // namespace unitrain::cli
