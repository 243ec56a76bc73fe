#pragma once
// TorchScript export: a trained model as a file that Python runs with torch.jit.load(path).
#include <string>

namespace torch::jit {
struct Module;
}

namespace unitrain {

class Model;

/// True for the models to_torchscript can export: the built-in mlp, cnn, transformer_lm and
/// torchscript models.
bool can_export_torchscript(const Model& model);

/// A TorchScript module computing what `model` computes in eval mode, holding copies of the
/// model's tensors under the names of its named_parameters() / named_buffers().
/// Throws ConfigError naming the model type when can_export_torchscript(model) is false.
torch::jit::Module to_torchscript(const Model& model);

/// Writes to_torchscript(model) to `path` via a temporary file and a rename.
/// Throws ConfigError as to_torchscript does; TrainError naming `path` when it cannot write.
void save_torchscript(const Model& model, const std::string& path);

}  // namespace unitrain
