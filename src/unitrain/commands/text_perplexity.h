#pragma once
// `unitrain eval --text FILE`: a language model's perplexity on a text file.
#include <cstdint>
#include <string>

#include "unitrain/core/config.h"

namespace unitrain {

/// What text_perplexity measured.
struct PerplexityResult {
  double perplexity = 0;  ///< exp(mean_nll)
  double mean_nll = 0;    ///< nats per predicted token
  int64_t tokens = 0;     ///< tokens predicted (each window's first has no context: not counted)
  int64_t windows = 0;
  std::string checkpoint;    ///< the checkpoint folder evaluated
  std::string results_file;  ///< run_dir/results/perplexity.json
};

/// The perplexity of checkpoint `checkpoint` of the run `config` names (its model: gpt2, llama
/// or transformer_lm) on `text_file`: its non-blank lines tokenised (the run's tokenizer,
/// data.train.args.tokenizer, unless `tokenizer` is given; a tokenizer.json's special tokens
/// around each line) and joined into one stream, cut into non-overlapping windows of `window` + 1
/// tokens (0: the model's longest context) overlapping by one; each window predicts its tokens
/// 1.. from those before, without gradients, in eval mode, in float64 sums. Writes
/// run_dir/results/perplexity.json. ConfigError naming the file, the tokenizer or the model when
/// they cannot do this.
PerplexityResult text_perplexity(const Config& config, const std::string& checkpoint,
                                 const std::string& text_file, const std::string& tokenizer,
                                 int64_t window);

}  // namespace unitrain
