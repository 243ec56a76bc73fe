#pragma once
// Ema: an exponential moving average of the weights, for validation and in checkpoints.
#include <map>
#include <string>
#include <vector>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/core/options.h"
#include "unitrain/engine/callback.h"
#include "unitrain/engine/parameter_state.h"

namespace unitrain {

struct EmaOptions {
  double decay = 0.999;  ///< average = decay * average + (1 - decay) * weights
  int64_t every = 1;     ///< update after every N-th optimizer step
  bool evaluate = true;  ///< validate and test with the averaged weights
  static void declare(Options<EmaOptions>& o);
};

/// Keeps average = decay * average + (1 - decay) * parameter after every `every`-th optimizer
/// step whose update was not skipped, starting from the weights at the start of training.
/// With `evaluate`, validation and test passes run with the averaged parameters (the module's
/// own buffers, e.g. batch norm statistics, are used as they are), and the training weights
/// are put back after. Checkpoints save the average (ema.pt, a dict of tensors by parameter
/// name, readable with torch.load); a resumed run continues it exactly. Frozen parameters
/// (requires_grad false: LoRA's base) are their own average: neither kept nor saved.
class Ema : public Callback, public ParameterState {
 public:
  explicit Ema(EmaOptions options);
  std::string name() const override { return "ema"; }
  bool reads_step_values() const override { return false; }
  bool hooks_inside_step() const override { return false; }
  void on_fit_start(Trainer& trainer) override;
  void on_after_optimizer_step(Trainer& trainer, bool skipped) override;
  void on_validation_start(Trainer& trainer) override { swap_in(trainer); }
  void on_validation_end(Trainer& trainer, const MetricMap&) override { swap_out(trainer); }
  void on_test_start(Trainer& trainer) override;
  void on_test_end(Trainer& trainer, const MetricMap&) override { swap_out(trainer); }
  void on_save_checkpoint(Trainer& trainer, CheckpointEntries& entries) override;
  void on_load_checkpoint(Trainer& trainer, const CheckpointEntries& entries) override;
  /// With `evaluate`: the saved average into `weights`' parameters.
  bool on_load_validated_weights(Trainer& trainer, torch::nn::Module& weights,
                                 const CheckpointEntries& entries) override;
  void on_exception(Trainer& trainer, const std::exception& error) override { swap_out(trainer); }

  /// distributed.zero: 3 keeps the average by parts (ParameterState): validation swaps it into
  /// the parts (the units gather it); checkpoints hold it as parts (ema-shard-rank-<R>.pt, saved
  /// and restored by the engine), and on_save/on_load_checkpoint leave it to the engine.
  ParameterState* parameter_state() override { return this; }
  std::string state_name() const override { return checkpoint_files::kEmaState; }
  void keep_parts(std::vector<torch::Tensor> parts) override;
  /// The averaged parameters, the trained ones in the module's named_parameters() order (after
  /// keep_parts(): every part, in the order of its `parts`).
  const std::vector<torch::Tensor>& values() const override { return average_; }
  void restart_from_parts() override;
  void make_whole(const torch::nn::Module& weights,
                  const std::map<std::string, torch::Tensor>& whole) override;

 private:
  std::vector<torch::Tensor> params(Trainer& trainer) const;
  void swap_in(Trainer& trainer);
  void swap_out(Trainer& trainer);
  EmaOptions options_;
  std::vector<std::string> names_;
  std::vector<torch::Tensor> average_;
  std::vector<torch::Tensor> kept_;   ///< the training weights while the average is swapped in
  std::vector<torch::Tensor> parts_;  ///< keep_parts()'s (empty: the module's parameters)
};

/// Registers callback `ema` (its name, help and args) in callback_registry();
/// register_builtin_callbacks() calls it.
void register_ema_callback();

}  // namespace unitrain
