#pragma once
// load_init_weights: a fine-tune's start, model.init_from's tensors loaded into the module.
namespace unitrain {

class ObjectiveModule;
struct ModelSection;

/// Loads model.init_from (a state_dict, possibly gzipped, a safetensors file or a checkpoint
/// folder, merged or in ZeRO 3's parts) into `module`, its names renamed by
/// model.init_key_map; logs what was loaded.
void load_init_weights(ObjectiveModule& module, const ModelSection& model);

}  // namespace unitrain
