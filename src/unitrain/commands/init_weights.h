#pragma once
// load_init_weights: a fine-tune's start, model.init_from's tensors loaded into the module.
namespace torch::nn {
class Module;
}

namespace unitrain {

class ObjectiveModule;
struct ModelSection;
struct HfModelInfo;

/// Loads model.init_from (a state_dict, possibly gzipped, a safetensors file or a checkpoint
/// folder, merged or in ZeRO 3's parts) into `module`, its names renamed by
/// model.init_key_map; logs what was loaded.
void load_init_weights(ObjectiveModule& module, const ModelSection& model);

/// Loads the weights of a model built from a Hugging Face folder (gpt2, llama:
/// model.args.pretrained) into `weights` (the model: an ObjectiveModule's weights()), strictly,
/// each renamed by hf.model_name (tensors it names "" skipped), floating-point tensors of
/// another precision converted; logs what was loaded. Train and generate load a folder so.
void load_pretrained_weights(torch::nn::Module& weights, const HfModelInfo& hf);

}  // namespace unitrain
