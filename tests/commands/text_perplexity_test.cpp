// `eval --text`: every line between the tokenizer's special tokens in one stream, cut into
// windows that overlap by one token, each token after the first predicted once.
#include "unitrain/commands/text_perplexity.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "commands/tiny_lm.h"
#include "commands/tiny_run.h"
#include "test_util.h"
#include "unitrain/commands/open_run.h"
#include "unitrain/commands/train_from_config.h"
#include "unitrain/core/file_bytes.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {
namespace {

/// tiny_lm_text()'s lines, each after <s> (0): a..o are ids 1..15.
const std::vector<int64_t> kStream = {0,  1,  2, 3, 4, 5, 6, 7, 0, 8, 9, 10, 11, 0, 12, 13,
                                      14, 15, 1, 2, 0, 3, 3, 4, 4, 5, 5, 6,  6,  7, 7};

struct TrainedLm {
  std::string text;
  Config config;
};

const TrainedLm& trained_lm() {
  static const TrainedLm lm = [] {
    const std::string folder = test::gpt2_folder_in(torch::kFloat32);
    const std::string text = test::tiny_lm_text();
    Config config =
        test::loaded_run(test::tiny_lm_run_yaml(test::temp_dir() + "/run", folder, text));
    train_from_config(config);
    return TrainedLm{text, config};
  }();
  return lm;
}

/// The summed negative log-likelihood of `ids[1..]` given those before, by the checkpoint's model
/// in windows of `window` + 1 ids starting every `window` ids.
double summed_nll(const Config& config, const std::vector<int64_t>& ids, int64_t window) {
  OpenedRun run = open_run(config, "last", "validated", "test");
  Model& model = *run.module->model();
  model.eval();
  torch::NoGradGuard no_grad;
  double nll = 0;
  for (size_t start = 0; start + 1 < ids.size(); start += size_t(window)) {
    const size_t end = std::min(ids.size(), start + size_t(window) + 1);
    const std::vector<int64_t> piece(ids.begin() + long(start), ids.begin() + long(end));
    const auto x = torch::tensor(std::vector<int64_t>(piece.begin(), piece.end() - 1)).unsqueeze(0);
    const auto logp = torch::log_softmax(model.forward_all({x})[0][0].to(torch::kDouble), -1);
    for (size_t i = 1; i < piece.size(); ++i) nll -= logp[long(i) - 1][piece[i]].item<double>();
  }
  return nll;
}

TEST(TextPerplexity, EachTokenAfterTheFirstIsPredictedOnceInWindowsOverlappingByOne) {
  const TrainedLm& lm = trained_lm();
  for (const int64_t window : {8, 30}) {
    const PerplexityResult r = text_perplexity(lm.config, "last", lm.text, "", window);
    EXPECT_EQ(r.tokens, int64_t(kStream.size()) - 1);
    EXPECT_EQ(r.windows, (r.tokens + window - 1) / window);
    const double want = summed_nll(lm.config, kStream, window) / double(r.tokens);
    EXPECT_NEAR(r.mean_nll, want, 1e-9) << "window " << window;
    EXPECT_NEAR(r.perplexity, std::exp(want), 1e-9 * std::exp(want));
  }
}

TEST(TextPerplexity, WindowZeroIsTheModelsContextAndTheResultsFileSaysWhatWasMeasured) {
  const TrainedLm& lm = trained_lm();
  // The folder's tokenizer named: the same tokens as the run's.
  const std::string tokenizer = lm.config.at("data").at("train").at("args").get_string("tokenizer");
  const PerplexityResult r = text_perplexity(lm.config, "last", lm.text, tokenizer, 0);
  EXPECT_EQ(r.windows, 1);  // 31 ids: one window of the context (32)
  const auto saved = nlohmann::json::parse(read_file_bytes(r.results_file, "test"));
  EXPECT_EQ(saved["window"], 32);
  EXPECT_EQ(saved["tokens"], r.tokens);
  EXPECT_EQ(saved["windows"], 1);
  EXPECT_EQ(saved["tokenizer"], tokenizer);
  EXPECT_EQ(saved["checkpoint"], r.checkpoint);
  EXPECT_DOUBLE_EQ(saved["perplexity"].get<double>(), r.perplexity);
}

TEST(TextPerplexity, AWindowPastTheContextIsRefusedWithTheLongestThatFits) {
  const TrainedLm& lm = trained_lm();
  const std::string e =
      test::config_error_of([&] { text_perplexity(lm.config, "last", lm.text, "", 33); });
  EXPECT_TRUE(test::contains(e, "--window 33 is longer than the model's context of 32 tokens"))
      << e;
  EXPECT_TRUE(test::contains(e, "give at most 32")) << e;
}

}  // namespace
}  // namespace unitrain
