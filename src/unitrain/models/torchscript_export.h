#pragma once
// TorchScript export: a trained model as a file that Python runs with torch.jit.load(path).
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}
namespace torch::nn {
class Module;
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

/// Adds the TorchScript export of the models `handles` accepts (one C++ model class), named
/// `model` in errors; ConfigError when `model` has one already. Use register_torchscript_export.
void add_torchscript_exporter(const std::string& model, std::function<bool(const Model&)> handles,
                              std::function<torch::jit::Module(const Model&)> exporter);

/// Registers how models of class M (and its subclasses) become TorchScript, next to M's own
/// definition: `to_jit(const M&)` returns a module computing what the model computes in eval
/// mode, holding copies of its tensors under the names of its named_parameters() /
/// named_buffers() (torchscript::mirror builds that tree). The built-in models register theirs
/// with their factories (register_builtin_models()); a plugin's model may do the same.
template <typename M, typename ToJit>
void register_torchscript_export(const std::string& model, ToJit to_jit) {
  add_torchscript_exporter(
      model, [](const Model& m) { return dynamic_cast<const M*>(&m) != nullptr; },
      [to_jit](const Model& m) { return to_jit(dynamic_cast<const M&>(m)); });
}

/// True for the models to_torchscript can export: those of a class with a registered export
/// (the built-in mlp, cnn, transformer_lm and torchscript models).
bool can_export_torchscript(const Model& model);
/// Why `model` (`what` names it: "model.type llama") cannot be exported as TorchScript, and
/// what to export instead.
std::string no_torchscript_text(const Model& model, const std::string& what);

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

/// Building blocks of the exports.
namespace torchscript {
/// The TorchScript twin of a LibTorch module tree: the same children, parameters and buffers
/// (copies) under the same names, with forward defined for Linear, Conv2d, BatchNorm2d,
/// LayerNorm and Embedding layers; the exporter defines the others'. ConfigError naming
/// `where` (the model type) for a layer setting TorchScript cannot express.
torch::jit::Module mirror(const torch::nn::Module& module, const std::string& where);
/// The submodule of `module` at the dotted `path`, e.g. "blocks.0.attention".
torch::jit::Module child(const torch::jit::Module& module, const std::string& path);
/// `getattr(self.<list>, "<i>")`: a child of a ModuleList (its name is a number, which
/// TorchScript source cannot spell as an attribute).
std::string item(const std::string& list, size_t i);
/// A double written so that TorchScript reads back the same value.
std::string literal(double v);
}  // namespace torchscript

}  // namespace unitrain
