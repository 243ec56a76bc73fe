#pragma once
// The `idx` dataset: MNIST-style IDX image and label files (plain or .gz).
#include <torch/types.h>

#include <string>

#include "unitrain/core/options.h"
#include "unitrain/data/dataset.h"

namespace unitrain {

/// Settings of the `idx` dataset (its `args`).
struct IdxOptions {
  std::string images;  ///< idx3-ubyte file: magic 0x00000803, N x rows x cols bytes
  std::string labels;  ///< idx1-ubyte file: magic 0x00000801, N bytes

  static void declare(Options<IdxOptions>& o);
};

/// MNIST / Fashion-MNIST images and labels. Examples: `x` float32 [1, H, W] in [0, 1] and `y`
/// int64 []. Images are kept as bytes and scaled per batch (4x less memory than floats).
/// ConfigError naming the file for a missing file, a wrong magic number (e.g. images and labels
/// swapped), an unsupported element type, a truncated file or counts that disagree.
class IdxDataset : public Dataset {
 public:
  explicit IdxDataset(const IdxOptions& options);

  int64_t size() const override { return labels_.size(0); }
  Batch get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  std::map<std::string, int64_t> info() const override { return info_; }
  bool in_memory() const override { return true; }

 private:
  torch::Tensor images_;  // uint8 [N, 1, H, W]
  torch::Tensor labels_;  // int64 [N]
  std::map<std::string, int64_t> info_;
};

/// Registers dataset `idx` (its name, help, args and factory) in dataset_registry();
/// register_builtin_datasets() calls it.
void register_idx_dataset();

}  // namespace unitrain
