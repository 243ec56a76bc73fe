#pragma once
// TorchScriptModel: a model exported from Python (torch.jit.script / torch.jit.trace), trained
// in C++. `model: {type: torchscript, args: {path: net.pt}}`.
#include <memory>
#include <string>
#include <vector>

#include "unitrain/models/model.h"

namespace torch::jit {
struct Module;
}

namespace unitrain::models {

/// Registers `torchscript` (`args: {path}`; a missing file is a ConfigError naming the key and
/// the path) and its TorchScript export, a copy of the loaded module (called by
/// register_builtin_models()).
void register_torchscript_model();

/// Wraps a TorchScript module loaded with torch::jit::load.
/// - Its parameters and buffers are registered on this torch::nn::Module (and on child
///   modules mirroring the TorchScript hierarchy) under the names of Python's state_dict
///   (`fc1.weight`). They are the very same tensors, so an optimizer over parameters() trains
///   the scripted module, and to(device) moves it. A parameter shared by two submodules is
///   listed once, under its first name (as Python's named_parameters()).
/// - forward_all passes the inputs positionally to `forward` (their count must fit its
///   signature). A returned Tensor is one prediction; a tuple or list of Tensors several; a
///   Dict[str, Tensor] gives one prediction per entry, in the dict's order, and
///   prediction_names() returns its keys (known after the first forward_all).
/// - train(on) / eval() switch the scripted module's training mode too.
/// Throws ConfigError naming the file when it is missing or not a TorchScript archive, when
/// forward does not fit the inputs (with their shapes), or when it returns something else.
class TorchScriptModel : public Model {
 public:
  explicit TorchScriptModel(const std::string& path);
  ~TorchScriptModel() override;

  std::vector<torch::Tensor> forward_all(const std::vector<torch::Tensor>& inputs) override;
  std::vector<std::string> prediction_names() const override;
  void train(bool on = true) override;
  /// ConfigError naming distributed.zero: the scripted forward runs as one graph, whose calls of
  /// its submodules cannot be run one unit at a time (ZeRO 3 needs that).
  std::vector<std::vector<torch::Tensor>> units() override;

  torch::jit::Module& jit_module() { return *module_; }
  const torch::jit::Module& jit_module() const { return *module_; }
  const std::string& path() const { return path_; }

 private:
  std::string name() const { return "torchscript model '" + path_ + "'"; }

  std::string path_;
  std::unique_ptr<torch::jit::Module> module_;
  size_t min_inputs_ = 0;
  size_t max_inputs_ = 0;
  std::vector<std::string> prediction_names_;
};

}  // namespace unitrain::models
