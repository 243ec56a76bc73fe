#include "unitrain/data/normalize_dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cmath>
#include <numeric>
#include <sstream>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

int64_t channels_of(const torch::Tensor& example) {
  return example.dim() == 0 ? 1 : example.size(0);
}

std::string dtype_name(const torch::Tensor& t) {
  return std::string(c10::toString(t.scalar_type()));
}

}  // namespace

ChannelStats channel_stats(const Dataset& data, const std::string& key) {
  constexpr int64_t kChunk = 4096;
  const int64_t n = data.size();
  UT_CHECK(n > 0, "cannot compute normalization statistics of an empty dataset");
  torch::Tensor sum, sum_sq;
  int64_t count = 0;
  for (int64_t start = 0; start < n; start += kChunk) {
    std::vector<int64_t> indices(static_cast<size_t>(std::min(kChunk, n - start)));
    std::iota(indices.begin(), indices.end(), start);
    torch::Tensor x = data.get_batch(indices).at(key);
    UT_CHECK(x.is_floating_point(), "tensor '", key, "' is ", dtype_name(x),
             "; only floating tensors can be normalized");
    const int64_t b = x.size(0);
    x = (x.dim() == 1 ? x.view({b, 1, 1}) : x.reshape({b, x.size(1), -1})).to(torch::kFloat64);
    const std::vector<int64_t> reduce_dims = {0, 2};
    torch::Tensor s = x.sum(reduce_dims), sq = x.square().sum(reduce_dims);
    sum = sum.defined() ? sum + s : s;
    sum_sq = sum_sq.defined() ? sum_sq + sq : sq;
    count += b * x.size(2);
  }
  torch::Tensor mean = sum / static_cast<double>(count);
  torch::Tensor var = (sum_sq / static_cast<double>(count) - mean.square()).clamp_min(0);
  ChannelStats out;
  std::vector<int64_t> constant;
  for (int64_t c = 0; c < mean.size(0); ++c) {
    double m = mean[c].item<double>(), sd = std::sqrt(var[c].item<double>());
    if (sd < 1e-12 * std::max(1.0, std::abs(m))) {
      constant.push_back(c);
      sd = 1.0;
    }
    out.mean.push_back(m);
    out.std.push_back(sd);
  }
  // Common and harmless (the always-blank border pixels of digit images): one line, not a
  // warning per channel.
  if (!constant.empty()) {
    spdlog::info(
        "normalize: {} of the {} channels of '{}' are constant in the train data ({}); "
        "they are centred, not scaled",
        constant.size(), mean.size(0), key, fmt::join(constant, ", "));
  }
  return out;
}

NormalizeDataset::NormalizeDataset(DatasetPtr inner, std::string key, std::vector<double> mean,
                                   std::vector<double> std, const std::string& config_key)
    : DatasetView(std::move(inner)), key_(std::move(key)) {
  UT_CHECK(inner_ != nullptr && inner_->size() > 0, config_key,
           ": nothing to normalize (empty dataset)");
  torch::Tensor example = inner_->get(0).at(key_);
  UT_CHECK(example.is_floating_point(), config_key, ".key: tensor '", key_, "' is ",
           dtype_name(example), "; only floating tensors can be normalized");
  const int64_t channels = channels_of(example);
  std::ostringstream shape;
  shape << example.sizes();
  UT_CHECK(static_cast<int64_t>(mean.size()) == channels, config_key, ".mean has ", mean.size(),
           " values but '", key_, "' has ", channels, " channels (dim 0 of its shape ", shape.str(),
           "); give one per channel, or [] to compute them from the train data");
  UT_CHECK(static_cast<int64_t>(std.size()) == channels, config_key, ".std has ", std.size(),
           " values but '", key_, "' has ", channels, " channels (dim 0 of its shape ", shape.str(),
           "); give one per channel, or [] to compute them from the train data");
  for (size_t c = 0; c < std.size(); ++c) {
    UT_CHECK(std[c] > 0, config_key, ".std[", c, "] must be > 0, got ", std[c]);
  }
  auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  mean_ = torch::tensor(mean, f64).to(torch::kFloat32);
  inv_std_ = (1.0 / torch::tensor(std, f64)).to(torch::kFloat32);
}

torch::Tensor NormalizeDataset::apply(const torch::Tensor& t, int64_t channel_dim) const {
  std::vector<int64_t> shape(static_cast<size_t>(t.dim()), 1);
  if (t.dim() > channel_dim) shape[static_cast<size_t>(channel_dim)] = mean_.size(0);
  return (t - mean_.view(shape)) * inv_std_.view(shape);
}

Batch NormalizeDataset::get(int64_t index) const {
  Batch example = inner_->get(index);
  example.set(key_, apply(example.at(key_), 0));
  return example;
}

Batch NormalizeDataset::get_batch(const std::vector<int64_t>& indices) const {
  Batch batch = inner_->get_batch(indices);
  batch.set(key_, apply(batch.at(key_), 1));
  return batch;
}

}  // namespace unitrain
