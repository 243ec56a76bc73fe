#pragma once
// Reading a model's weights from wherever a user keeps them: a state_dict file, a safetensors
// file or a checkpoint; renaming them to the model's names.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/checkpoint/state_io.h"

namespace unitrain {

/// The tensors at `path`, which is either a file holding a dict of tensors (a state_dict saved
/// by Python's `torch.save(model.state_dict(), f)` or by `unitrain export --format
/// state_dict`), a safetensors file (by its name or its bytes: is_safetensors) or a unitrain
/// checkpoint folder (its model.pt, checked against the manifest, or a ZeRO 3 checkpoint's
/// parts merged), such as a run's `checkpoints/best` or `checkpoints/last`, or a Hugging Face
/// folder (model.safetensors or its shards: hf_folder.h).
/// ConfigError naming `key` and `path` when the path is missing, a folder that is not a
/// checkpoint (for a run folder, saying which of its folders to give), or the bytes are not a
/// dict of tensors.
NamedTensors read_model_weights(const std::string& path, const std::string& key);

/// Prefix renames (from, to), e.g. {"transformer.", ""}: `model.init_key_map`.
using KeyMap = std::vector<std::pair<std::string, std::string>>;

/// `tensors` with every name that begins with a prefix of `map` renamed: the longest matching
/// prefix is replaced by its value ({"transformer.": ""} drops a prefix, {"": "net."} adds one).
/// ConfigError naming `key` when a prefix matches no name (showing some of the names) or two
/// names become one.
NamedTensors rename_keys(NamedTensors tensors, const KeyMap& map, const std::string& key);

/// When the names of a file and of a model differ by prefix renames, the clause that says so
/// and gives the `key` ({from: to, ...}) that loads them all, e.g. `; the file's names start
/// with "transformer." where the model's start with "": set model.init_key_map:
/// {"transformer.": ""} to rename them`; with several prefixes (`transformer.` and `lm_head.`)
/// one map with a rename for each; "" when no set of renames brings every missing name.
/// `fits` (when given) says whether the file's tensor `file_name` can load into the model's
/// `model_name` (their shapes): a rename is suggested only between names that fit.
std::string key_map_hint(const std::vector<std::string>& file_names,
                         const std::vector<std::string>& model_names, const std::string& key,
                         const std::function<bool(const std::string& file_name,
                                                  const std::string& model_name)>& fits = nullptr);

}  // namespace unitrain
