// distributed.reproducible's refusals: each names the keys and the way out; off, nothing is
// checked.
#include "unitrain/engine/setup/reproducible_checks.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "unitrain/core/error.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/config/run_settings.h"

namespace unitrain {
namespace {

RunSettings settings_of(const std::string& yaml) {
  return RunSettings::from_config(resolve_run_config(Config::from_string(yaml)));
}

/// The message check_reproducible throws for `yaml` on `world` processes ("" when none).
std::string refusal(const std::string& yaml, int world) {
  try {
    check_reproducible(settings_of(yaml), world);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool mentions(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// OMP_NUM_THREADS unset for a test, as it was after.
class WithoutOmpThreads {
 public:
  WithoutOmpThreads() {
    if (const char* v = std::getenv("OMP_NUM_THREADS")) saved_ = v;
    unsetenv("OMP_NUM_THREADS");
  }
  ~WithoutOmpThreads() {
    if (saved_) {
      setenv("OMP_NUM_THREADS", saved_->c_str(), 1);
    } else {
      unsetenv("OMP_NUM_THREADS");
    }
  }

 private:
  std::optional<std::string> saved_;
};

TEST(ReproducibleChecks, WhatWouldDependOnTheWorldSizeIsNamed) {
  const WithoutOmpThreads unset;
  const std::string on = "distributed: {reproducible: 12}\ntrain: {threads: 1}\n";
  EXPECT_EQ(refusal(on, 1), "");
  EXPECT_EQ(refusal(on, 3), "");
  EXPECT_TRUE(mentions(refusal(on, 5), "5 processes do not divide the 12 micro-shards"));
  EXPECT_TRUE(mentions(refusal(on, 5), "start a new run with a G that 5 divides (a run resumes"));
  EXPECT_TRUE(mentions(refusal(on, 5), "1, 2, 3, 4, 6 or 12"));
  EXPECT_EQ(refusal("distributed: {reproducible: 12, zero: 3}\ntrain: {threads: 1}\n", 2), "");
  EXPECT_TRUE(mentions(refusal("distributed: {reproducible: 12}\ntrain: {threads: 1, "
                               "cuda_graphs: true}\n",
                               2),
                       "train.cuda_graphs"));
  EXPECT_TRUE(mentions(refusal("distributed: {reproducible: 12}\ntrain: {threads: 1, "
                               "accumulation_steps: 4}\n",
                               2),
                       "train.accumulation_steps is 4"));
  EXPECT_EQ(refusal("distributed: {reproducible: 12}\ntrain: {threads: 1, "
                    "accumulation_steps: 6}\n",
                    2),
            "");  // G / W: what a resume on W sets
  EXPECT_TRUE(mentions(refusal("distributed: {reproducible: 12}\ntrain: {threads: 1, "
                               "global_batch_size: 100}\ndata: {loader: {batch_size: 8}}\n",
                               2),
                       "make a step of 96 samples"));
  EXPECT_TRUE(mentions(refusal("distributed: {reproducible: 12}\n", 2), "set train.threads"));
  setenv("OMP_NUM_THREADS", "2", 1);
  EXPECT_EQ(refusal("distributed: {reproducible: 12}\n", 2), "");
  unsetenv("OMP_NUM_THREADS");
  EXPECT_EQ(refusal("train: {cuda_graphs: true}\n", 5), "");  // off: nothing checked
}

}  // namespace
}  // namespace unitrain
