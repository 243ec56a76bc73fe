#pragma once
// ModelSummary: the model's parameters per module, trainable and frozen, at the start.
#include <string>

#include "unitrain/core/options.h"
#include "unitrain/engine/callback.h"

namespace torch::nn {
class Module;
}

namespace unitrain {

struct ModelSummaryOptions {
  int64_t max_depth = 1;  ///< module nesting shown: 1 = the model's direct children
  static void declare(Options<ModelSummaryOptions>& o);
};

/// The summary's text: one row per module down to `max_depth` (name, type, parameters,
/// trainable, frozen), then the totals and the parameters' size.
std::string model_summary(const torch::nn::Module& model, int64_t max_depth);

/// Logs model_summary() of the module when fit() starts (rank 0).
class ModelSummary : public Callback {
 public:
  explicit ModelSummary(ModelSummaryOptions options) : options_(options) {}
  std::string name() const override { return "model_summary"; }
  bool reads_step_values() const override { return false; }
  bool hooks_inside_step() const override { return false; }
  void on_fit_start(Trainer& trainer) override;

 private:
  ModelSummaryOptions options_;
};

/// Registers callback `model_summary` (its name, help and args) in callback_registry();
/// register_builtin_callbacks() calls it.
void register_model_summary_callback();

}  // namespace unitrain
