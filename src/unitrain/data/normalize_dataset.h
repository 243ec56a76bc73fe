#pragma once
// NormalizeDataset: (x - mean) / std per channel of one tensor of every example.
#include <torch/types.h>

#include <string>
#include <vector>

#include "unitrain/data/dataset.h"

namespace unitrain {

/// Per-channel statistics of one tensor over a dataset. The channel is dim 0 of the example
/// (the C of an image [C, H, W], the feature of a vector [F]); a scalar has one channel.
struct ChannelStats {
  std::vector<double> mean;
  std::vector<double> std;  ///< population std; a constant channel gets 1 (left unscaled)
};
/// Reads every example of `data` (in batches) once. ConfigError when `key` is not a floating
/// tensor of the examples.
ChannelStats channel_stats(const Dataset& data, const std::string& key);

/// `inner` with tensor `key` of every example replaced by (key - mean[c]) / std[c] on channel
/// c. ConfigError (naming `config_key`) when the tensor is missing or not floating, when the
/// number of means/stds differs from the number of channels, or a std is <= 0.
class NormalizeDataset : public DatasetView {
 public:
  NormalizeDataset(DatasetPtr inner, std::string key, std::vector<double> mean,
                   std::vector<double> std, const std::string& config_key = "data.normalize");

  int64_t size() const override { return inner_->size(); }
  Batch get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;

 private:
  // Normalizes `t`, whose channel dim is `channel_dim` (0 for an example, 1 for a batch).
  torch::Tensor apply(const torch::Tensor& t, int64_t channel_dim) const;

  std::string key_;
  torch::Tensor mean_;     // float32 [C]
  torch::Tensor inv_std_;  // float32 [C]
};

}  // namespace unitrain
