#pragma once
// RunText: what a run's text tools (generate, eval --text, the generate callback, export's
// tokenizer files) read of its config, in one place: the run's tokenizer and how its train set
// put text into tokens.
#include <string>

#include "unitrain/core/config.h"

namespace unitrain {

/// A run's text settings, read from its resolved config through the keys its train set's
/// dataset and its model declare (their registered args): a dataset that declares `tokenizer`,
/// `template` or `add_special_tokens`, a model that declares `pretrained`.
struct RunText {
  std::string train_tokenizer;     ///< data.train.args.tokenizer; "" when none
  std::string pretrained;          ///< model.args.pretrained (a Hugging Face folder); "" when none
  std::string template_text;       ///< data.train.args.template (instruct's); "" when none
  bool add_special_tokens = true;  ///< data.train.args.add_special_tokens; true when none

  /// The run's tokenizer: train_tokenizer, else the tokenizer.json (or tokenizer.model) of the
  /// pretrained folder; "" when there is none.
  std::string tokenizer() const;
  /// Why the run has no tokenizer, naming where it was looked for.
  std::string no_tokenizer_text() const;
  /// The text a prompt is put into, with {prompt}: `given` when not empty, else the train set's
  /// template, else "{prompt}".
  std::string prompt_template(const std::string& given) const;
};

/// The text settings of `resolved`, a config-driven run's config resolved by load_run_config
/// (ConfigError when it has no model or no train set, as config_driven()).
RunText run_text(const Config& resolved);

}  // namespace unitrain
