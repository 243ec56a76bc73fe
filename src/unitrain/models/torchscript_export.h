#pragma once
// TorchScript export: a trained model as a file that Python runs with torch.jit.load(path).
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace unitrain {

class Model;

/// Per-channel input normalisation an exported module applies before the model, as
/// `data.normalize` did in training: (x - mean[c]) / std[c] on dim 1 of the batch (dim 0, the
/// channel, of one example).
struct InputNormalization {
  std::vector<double> mean;
  std::vector<double> std;
};

/// True for the models to_torchscript can export: the built-in mlp, cnn, transformer_lm and
/// torchscript models.
bool can_export_torchscript(const Model& model);

/// A TorchScript module computing what `model` computes in eval mode, holding copies of the
/// model's tensors under the names of its named_parameters() / named_buffers(). With `norm`,
/// the module normalises its input first: the model is then its child `model` (tensor names
/// `model.<name>`) and the statistics are its buffers `input_mean` and `input_inv_std`.
/// Throws ConfigError naming the model type when can_export_torchscript(model) is false.
torch::jit::Module to_torchscript(const Model& model, const InputNormalization* norm = nullptr);

/// Writes to_torchscript(model, norm) to `path` via a temporary file and a rename.
/// Throws ConfigError as to_torchscript does; TrainError naming `path` when it cannot write.
void save_torchscript(const Model& model, const std::string& path,
                      const InputNormalization* norm = nullptr);

}  // namespace unitrain
