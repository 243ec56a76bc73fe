#include "unitrain/data/idx_dataset.h"

#include <torch/torch.h>

#include <cstdio>

#include "unitrain/core/error.h"
#include "unitrain/core/file_bytes.h"
#include "unitrain/data/tensor_dataset.h"

namespace unitrain {
namespace {

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

uint32_t read_be32(const std::string& bytes, size_t offset) {
  auto b = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<unsigned char>(bytes[offset + i]));
  };
  return (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
}

// Parses an IDX file of unsigned bytes with `ndim` dimensions; returns a uint8 tensor.
torch::Tensor read_idx(const std::string& path, const std::string& key, int ndim,
                       const char* what) {
  const std::string bytes = read_file_bytes(path, key);
  const uint32_t expected_magic = 0x0800u | static_cast<uint32_t>(ndim);
  UT_CHECK(bytes.size() >= 4, key, ": '", path, "' is too short to be an IDX file (", bytes.size(),
           " bytes)");
  const uint32_t magic = read_be32(bytes, 0);
  if (magic != expected_magic) {
    std::string hint;
    if (magic == 0x00000801u)
      hint = " (that is an IDX labels file: are images and labels swapped?)";
    if (magic == 0x00000803u)
      hint = " (that is an IDX images file: are images and labels swapped?)";
    if ((magic >> 16) == 0 && (magic & 0xFF) == static_cast<uint32_t>(ndim) &&
        ((magic >> 8) & 0xFF) != 0x08) {
      hint = " (element type " + hex((magic >> 8) & 0xFF) +
             "; only unsigned bytes, 0x08, are supported)";
    }
    throw ConfigError(detail::concat(key, ": '", path, "' is not an IDX ", what, " file: magic ",
                                     hex(magic), ", expected ", hex(expected_magic), hint));
  }
  const size_t header = 4 + 4 * static_cast<size_t>(ndim);
  UT_CHECK(bytes.size() >= header, key, ": '", path, "' is truncated inside its header");
  std::vector<int64_t> dims;
  size_t count = 1;
  for (int d = 0; d < ndim; ++d) {
    dims.push_back(read_be32(bytes, 4 + 4 * static_cast<size_t>(d)));
    count *= static_cast<size_t>(dims.back());
  }
  UT_CHECK(bytes.size() == header + count, key, ": '", path, "' should hold ", count,
           " bytes of data after its header (", torch::IntArrayRef(dims), "), found ",
           bytes.size() - header, bytes.size() < header + count ? " (truncated)" : "");
  return torch::from_blob(const_cast<char*>(bytes.data() + header), dims, torch::kUInt8).clone();
}

}  // namespace

void IdxOptions::declare(Options<IdxOptions>& o) {
  o.field("images", &IdxOptions::images)
      .required()
      .help(
          "IDX images file (e.g. train-images-idx3-ubyte[.gz]); relative to the current directory");
  o.field("labels", &IdxOptions::labels)
      .required()
      .help("IDX labels file (e.g. train-labels-idx1-ubyte[.gz])");
}

IdxDataset::IdxDataset(const IdxOptions& options) {
  torch::Tensor images = read_idx(options.images, "idx images", 3, "images");
  torch::Tensor labels = read_idx(options.labels, "idx labels", 1, "labels");
  UT_CHECK(images.size(0) == labels.size(0), "idx: '", options.images, "' has ", images.size(0),
           " images but '", options.labels, "' has ", labels.size(0), " labels");
  UT_CHECK(images.size(0) > 0, "idx: '", options.images, "' holds no images");
  images_ = images.unsqueeze(1).contiguous();
  labels_ = labels.to(torch::kInt64);
  info_ = {{"num_classes", labels_.max().item<int64_t>() + 1},
           {"height", images_.size(2)},
           {"width", images_.size(3)}};
}

Batch IdxDataset::get(int64_t index) const {
  UT_CHECK(index >= 0 && index < size(), "idx: example index ", index, " is out of range [0, ",
           size(), ")");
  return {{"x", images_[index].to(torch::kFloat32).div_(255.0)}, {"y", labels_[index]}};
}

Batch IdxDataset::get_batch(const std::vector<int64_t>& indices) const {
  torch::Tensor index = index_tensor(indices);
  return {{"x", images_.index_select(0, index).to(torch::kFloat32).div_(255.0)},
          {"y", labels_.index_select(0, index)}};
}

void register_idx_dataset() {
  dataset_registry().add<IdxOptions>(
      "idx", "MNIST-style IDX images + labels (.gz too): x float32 [1, H, W] in [0, 1], y int64",
      [](const IdxOptions& o) -> DatasetPtr { return std::make_shared<IdxDataset>(o); });
}

}  // namespace unitrain
