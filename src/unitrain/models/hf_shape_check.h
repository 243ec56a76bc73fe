#pragma once
// A Hugging Face model's shape as its config.json gives it, checked before the model is built:
// against the headers of the folder's weights (every tensor's name and shape, the number of
// layers), or, for a fresh model, against the memory the process may use. So a config.json
// that is not its weights' is refused in milliseconds, naming the key and the tensor, and never
// builds a model of a size no file holds.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace unitrain::models {

/// A tensor a model of a config.json's shape has.
struct ConfigTensor {
  std::string name;  ///< as the model names its parameter
  std::vector<int64_t> shape;
  std::string keys;  ///< the config.json keys that make the shape: "n_embd 32, ..."
};

/// What a config.json says of a model's tensors.
struct ConfigShape {
  std::string model;        ///< "gpt2"
  std::string config_path;  ///< the config.json
  std::string layers_key;   ///< "n_layer"
  int64_t layers = 0;
  std::string layer_prefix;  ///< "transformer.h.": a layer's tensors are <prefix><i>.<...>
  std::vector<ConfigTensor> tensors;
};

/// Refuses `shape` unless it fits: with `pretrained` (a folder), its weights' headers hold
/// exactly its tensors (by the model's names: `model_name` maps a file's name to the model's,
/// "" for a tensor the model does not hold) with its shapes and layers 0..layers-1, in
/// floating-point dtypes (pytorch_model.bin has no header: its files must be large enough for
/// the tensors); without, its float32 parameters fit the memory this process may use.
/// ConfigError naming the config.json, the key and the tensor, and the weight file.
void check_config_shape(const ConfigShape& shape, const std::string& pretrained,
                        const std::function<std::string(const std::string&)>& model_name);

}  // namespace unitrain::models
