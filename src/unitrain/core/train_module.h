#pragma once
// TrainModule: what the Trainer trains. Subclass it (library path) or let the YAML build an
// ObjectiveModule (config path); both run on the same engine.
#include <torch/nn/module.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "unitrain/core/batch.h"
#include "unitrain/core/error.h"
#include "unitrain/core/metric_value.h"
#include "unitrain/core/unit_runner.h"

namespace torch::optim {
class Optimizer;
}

namespace unitrain {

class Model;
class OptimizerSetup;

/// The result of one step on one batch.
struct StepOutput {
  torch::Tensor loss;                          ///< scalar, mean over the batch
  std::map<std::string, MetricValue> metrics;  ///< logged as train/<name>, val/<name>
};

/// What a module sees of the run that trains it, during fit() (TrainModule::run()): where the
/// run stands, a log, and — for a module that steps its own optimizers — their backward and
/// the optimizers.
class ModuleRun {
 public:
  virtual ~ModuleRun() = default;
  /// Optimizer steps taken before the current one (Lightning's global_step), and epochs done.
  virtual int64_t step() const = 0;
  virtual int64_t epoch() const = 0;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// The device the module trains on (train.device): where tensors that training_step makes
  /// itself (noise, labels, masks) belong. Batches, parameters and optimizer state are moved
  /// there by the Trainer.
  virtual torch::Device device() const = 0;
  /// Adds `value` to the next training log event as train/<name>: the mean of the values logged
  /// (on every rank) since the last log. Checkpoints carry the running sums.
  virtual void log(const std::string& name, double value) = 0;
  /// The same for a scalar tensor (e.g. a loss), read where it is: on a GPU it is summed on the
  /// device and read once per log event, so logging it costs no host synchronisation per step
  /// (log(name, t.item<double>()) waits for the GPU every step). Detached; any dtype.
  virtual void log(const std::string& name, const torch::Tensor& value) = 0;
  /// Manual optimization: backward of `loss`, then (data parallel) the gradients averaged over
  /// the processes, so that each rank's optimizers then step the same. Use it instead of
  /// loss.backward(). Parameters that no rank's loss reached keep the gradient they had.
  virtual void backward(const torch::Tensor& loss) = 0;
  /// Manual optimization: the optimizer configure_optimizers() added as `name` (ConfigError
  /// naming the known ones otherwise).
  virtual torch::optim::Optimizer& optimizer(const std::string& name) = 0;
};

/// A model plus how to compute its loss and metrics on a batch. Register submodules and
/// parameters as in any torch::nn::Module; the Trainer optimises parameters().
class TrainModule : public torch::nn::Module {
 public:
  virtual StepOutput training_step(const Batch& batch) = 0;
  virtual StepOutput validation_step(const Batch& batch) = 0;
  virtual StepOutput test_step(const Batch& batch) { return validation_step(batch); }
  /// The module whose parameters and buffers a checkpoint's model.pt and `unitrain export`
  /// hold and `model.init_from` loads, by its state_dict() names. Default: this module.
  virtual torch::nn::Module& weights() { return *this; }
  /// Whether a checkpoint's model.pt holds only the parameters of weights() that train (and
  /// its buffers): the frozen ones (LoRA's base model) are read again from where they came on
  /// resume, checked against the fingerprint the checkpoint keeps. Default: false (all).
  virtual bool checkpoints_trainable_only() { return false; }
  /// The registered model (models/model.h) this module trains, for what needs its declared
  /// capabilities (the generate callback: Model::generation_model); null when it trains none.
  /// The config-driven path's ObjectiveModule returns its model. Default: null.
  virtual Model* trained_model() { return nullptr; }
  /// The pieces of weights() that forward runs one after another (a transformer's embeddings,
  /// each block, its head), each as the list of its parameters, in the order forward runs them;
  /// every trainable parameter in one. ZeRO stage 3 (distributed.zero: 3) keeps each unit's
  /// parameters sharded across the processes and gathers them just before the unit runs.
  /// Default: none (the module cannot be trained with ZeRO stage 3).
  virtual std::vector<std::vector<torch::Tensor>> units() { return {}; }
  /// Pipeline parallelism (distributed.pipeline_parallel, each stage running some of units()):
  /// units [first, end) on `batch`, `x` being what unit first - 1 returned (undefined when
  /// first is 0: the batch's inputs feed unit 0); returns what unit end - 1 returns. Default:
  /// ConfigError (the module cannot be cut into stages). ObjectiveModule runs its model's.
  virtual torch::Tensor forward_units(const Batch& batch, size_t first, size_t end,
                                      const torch::Tensor& x);
  /// The loss of `batch` from `out`, what the last unit returned (on the pipeline's last
  /// stage); no metrics. Default: ConfigError.
  virtual StepOutput loss_of_units(const Batch& batch, const torch::Tensor& out);
  /// Parameters a unit uses besides its own (units() lists each parameter in one unit), as
  /// (unit, parameter): a head tied to the embeddings uses unit 0's weight in the last unit.
  /// Under pipeline parallelism both stages hold it and their gradients are summed. Default:
  /// none.
  virtual std::vector<std::pair<size_t, torch::Tensor>> borrowed_parameters() { return {}; }
  /// Why this module cannot be trained cut into pipeline stages, as a ConfigError's message
  /// naming the key to change; nullopt when it can. Asked before anything is written. Default:
  /// the module declares no forward_units.
  virtual std::optional<std::string> stage_refusal();
  /// What each unit of units() costs to run, relative to the others: the pipeline's stages are
  /// balanced by it (unless distributed.pipeline_cuts names the cuts). Default: each unit's
  /// parameter elements.
  virtual std::vector<double> unit_costs();
  /// Who runs the units (null: they run straight through). A module with units() runs each
  /// through it: `runner->run(i, fn, inputs)` (core/unit_runner.h).
  virtual void set_unit_runner(std::shared_ptr<UnitRunner> runner) {}
  /// Which way the metric this module logs as `name` (without its split: "acc" for val/acc)
  /// improves; nullopt when it does not say. `checkpoint.best.mode: auto` and
  /// `early_stopping.mode: auto` follow it. Default: "loss" is lower-is-better, nothing else
  /// is declared; override it to declare your own metrics'.
  virtual std::optional<MetricDirection> metric_direction(const std::string& name) const {
    if (name == "loss") return MetricDirection::LowerIsBetter;
    return std::nullopt;
  }
  /// Manual optimization (Lightning's `automatic_optimization = False`): add the optimizers
  /// (each with its lr schedule) that training_step steps itself, through run().backward() and
  /// run().optimizer(name).step() (optim/optimizer_setup.h). Their state and schedules are saved
  /// in every checkpoint and restored on resume, lr_monitor and train/lr-<name> follow them, and
  /// data-parallel runs average each backward's gradients. Adding none (the default) is
  /// automatic optimization: the Trainer builds one optimizer (the `optimizer` and `scheduler`
  /// sections, or Trainer::configure_optimizer) and steps it after each accumulation window.
  virtual void configure_optimizers(OptimizerSetup& setup) {}
  /// The run this module trains in, during fit(); ConfigError outside.
  ModuleRun& run() const;
  /// The Trainer's: sets (null: clears) what run() returns.
  void set_run(ModuleRun* run) { run_ = run; }

 private:
  ModuleRun* run_ = nullptr;
};

inline std::optional<std::string> TrainModule::stage_refusal() {
  return "distributed.pipeline_parallel: the module cannot be cut into stages (it declares no "
         "forward_units: TrainModule::units(), forward_units, loss_of_units and stage_refusal; "
         "the config path cuts transformer_lm, gpt2 and the llama-shaped models); set it to 1";
}

inline torch::Tensor TrainModule::forward_units(const Batch&, size_t, size_t,
                                                const torch::Tensor&) {
  throw ConfigError(*TrainModule::stage_refusal());
}

inline StepOutput TrainModule::loss_of_units(const Batch&, const torch::Tensor&) {
  throw ConfigError(*TrainModule::stage_refusal());
}

/// Each unit's parameter elements: the cost unit_costs() gives by default.
inline std::vector<double> parameter_elements(
    const std::vector<std::vector<torch::Tensor>>& units) {
  std::vector<double> out;
  for (const auto& unit : units) {
    double n = 0;
    for (const auto& p : unit) n += static_cast<double>(p.numel());
    out.push_back(n);
  }
  return out;
}

inline std::vector<double> TrainModule::unit_costs() { return parameter_elements(units()); }

inline ModuleRun& TrainModule::run() const {
  UT_CHECK(run_ != nullptr,
           "TrainModule::run() is only available during Trainer::fit() (in training_step)");
  return *run_;
}

}  // namespace unitrain
