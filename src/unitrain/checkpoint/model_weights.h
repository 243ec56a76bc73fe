#pragma once
// Reading a model's weights from wherever a user keeps them: a state_dict file or a checkpoint.
#include <string>

#include "unitrain/checkpoint/state_io.h"

namespace unitrain {

/// The tensors at `path`, which is either a file holding a dict of tensors (a state_dict saved
/// by Python's `torch.save(model.state_dict(), f)` or by `unitrain export --format
/// state_dict`) or a unitrain checkpoint folder (its model.pt, checked against the manifest),
/// such as a run's `checkpoints/best` or `checkpoints/last`.
/// ConfigError naming `key` and `path` when the path is missing, a folder that is not a
/// checkpoint (for a run folder, saying which of its folders to give), or the bytes are not a
/// dict of tensors.
NamedTensors read_model_weights(const std::string& path, const std::string& key);

}  // namespace unitrain
