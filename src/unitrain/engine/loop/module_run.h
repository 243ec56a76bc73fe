#pragma once
// LoopModuleRun: what a module sees of the run that trains it (TrainModule::run()).
#include <functional>
#include <string>
#include <vector>

#include "unitrain/core/train_module.h"
#include "unitrain/core/train_state.h"

namespace unitrain {

class GradientSync;
class LoopOptimizers;

/// The run a TrainLoop gives its module for one fit(): the counters, the device, a log (each
/// value handed to `log`, a float64 scalar for a number), and for manual
/// optimization the backward (averaged across ranks through `sync`) and the optimizers.
class LoopModuleRun : public ModuleRun {
 public:
  LoopModuleRun(const TrainState& counters, int rank, int world, torch::Device device,
                std::function<void(const std::string&, torch::Tensor)> log, GradientSync& sync,
                const LoopOptimizers& optimizers, std::vector<torch::Tensor> params);

  int64_t step() const override { return counters_.step; }
  int64_t epoch() const override { return counters_.epoch; }
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  torch::Device device() const override { return device_; }
  void log(const std::string& name, double value) override;
  void log(const std::string& name, const torch::Tensor& value) override;
  void backward(const torch::Tensor& loss) override;
  torch::optim::Optimizer& optimizer(const std::string& name) override;

 private:
  const TrainState& counters_;
  int rank_, world_;
  torch::Device device_;
  std::function<void(const std::string&, torch::Tensor)> log_;
  GradientSync& sync_;
  const LoopOptimizers& optimizers_;
  std::vector<torch::Tensor> params_;
  bool leaves_checked_ = false;  ///< the first backward's graph was looked at for stray leaves
};

}  // namespace unitrain
