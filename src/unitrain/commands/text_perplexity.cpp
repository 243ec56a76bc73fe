#include "unitrain/commands/text_perplexity.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "unitrain/checkpoint/state_io.h"
#include "unitrain/commands/open_run.h"
#include "unitrain/core/atomic_file.h"
#include "unitrain/core/error.h"
#include "unitrain/core/registry.h"
#include "unitrain/engine/config/run_text.h"
#include "unitrain/engine/setup/run_folder.h"
#include "unitrain/objective/objective_module.h"
#include "unitrain/text/text_lines.h"
#include "unitrain/text/tokenizer.h"

namespace unitrain {
namespace {

/// Every line's ids with the tokenizer's special tokens around it, one after another.
std::vector<int64_t> token_stream(const std::string& file, const Tokenizer& tokenizer) {
  const TextLines lines({file}, TextFormat::Lines, "", "eval --text");
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < lines.size(); ++i) {
    for (int id : tokenizer.special_prefix()) ids.push_back(id);
    for (int id : tokenizer.encode(lines.text(i))) ids.push_back(id);
    for (int id : tokenizer.special_suffix()) ids.push_back(id);
  }
  return ids;
}

}  // namespace

PerplexityResult text_perplexity(const Config& given, const std::string& checkpoint,
                                 const std::string& text_file, const std::string& tokenizer,
                                 int64_t window) {
  OpenedRun opened = open_run(given, checkpoint, "validated", "eval");
  Model& model = *opened.module->model();
  const RunText run = opened.text();
  const std::string tok = !tokenizer.empty() ? tokenizer : run.tokenizer();
  UT_CHECK(!tok.empty(), "eval --text: the run's ", run.no_tokenizer_text(), "; give --tokenizer");
  const std::optional<int64_t> context = model.context_length();
  if (window == 0) window = context.value_or(0);
  UT_CHECK(window >= 1, "eval --text: the model (model.type ",
           component_type(opened.config.at("model")),
           ") does not say its context length; give --window");
  UT_CHECK(!context || window <= *context, "eval --text: --window ", window,
           " is longer than the model's context of ", *context, " tokens (model.type ",
           component_type(opened.config.at("model")), "); give at most ", *context,
           " (0: the whole context)");
  const std::vector<int64_t> ids = token_stream(text_file, *load_tokenizer(tok));
  UT_CHECK(ids.size() >= 2, "eval --text ", text_file, ": it encodes to fewer than 2 tokens");
  model.eval();
  torch::NoGradGuard no_grad;
  PerplexityResult r;
  double nll = 0;
  const auto all = torch::tensor(ids, torch::kLong);
  for (int64_t start = 0; start + 1 < all.size(0); start += window) {
    const int64_t n = std::min(window + 1, all.size(0) - start);
    const auto piece = all.narrow(0, start, n).unsqueeze(0);
    const auto logits = model.forward_all({piece.narrow(1, 0, n - 1)})[0];
    nll += torch::nn::functional::cross_entropy(
               logits[0].to(torch::kDouble), piece[0].narrow(0, 1, n - 1),
               torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
               .item<double>();
    r.tokens += n - 1;
    r.windows += 1;
  }
  r.mean_nll = nll / double(r.tokens);
  r.perplexity = std::exp(r.mean_nll);
  r.checkpoint = opened.dir;
  const std::string results = opened.parts.run.run_dir + "/results";
  prepare_writable_dir(results);
  r.results_file = results + "/perplexity.json";
  nlohmann::json out{{"file", text_file},          {"tokenizer", tok},
                     {"checkpoint", r.checkpoint}, {"window", window},
                     {"windows", r.windows},       {"tokens", r.tokens},
                     {"mean_nll", r.mean_nll},     {"perplexity", r.perplexity}};
  write_file_atomic(r.results_file, out.dump(1) + "\n");
  return r;
}

}  // namespace unitrain
