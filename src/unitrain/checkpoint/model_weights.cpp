#include "unitrain/checkpoint/model_weights.h"

#include <filesystem>

#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/file_image.h"
#include "unitrain/core/error.h"

namespace unitrain {

NamedTensors read_model_weights(const std::string& path, const std::string& key) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw ConfigError(detail::concat(
        key, ": '", path, "' does not exist",
        fs::path(path).is_relative() ? " (relative to " + fs::current_path(ec).string() + ")" : "",
        "; give a state_dict file, a checkpoint folder or a run's checkpoints/best"));
  }
  try {
    if (!fs::is_directory(path, ec)) return load_tensor_dict(read_file(path), key + " " + path);
    if (!CheckpointStore::has(path, "model.pt")) {
      const bool run_folder = fs::is_directory(fs::path(path) / "checkpoints", ec);
      throw ConfigError(detail::concat(
          key, ": '", path, "' is a folder but not a unitrain checkpoint (no manifest listing ",
          "model.pt)",
          run_folder ? "; it looks like a run folder: give " + path + "/checkpoints/best or " +
                           path + "/checkpoints/last"
                     : ""));
    }
    return load_tensor_dict(CheckpointStore::read(path, "model.pt"),
                            key + " " + path + "/model.pt");
  } catch (const TrainError& e) {
    throw ConfigError(e.what());  // bad input, found before training
  }
}

}  // namespace unitrain
