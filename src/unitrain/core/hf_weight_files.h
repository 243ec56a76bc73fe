#pragma once
// Which files of a Hugging Face model folder hold its weights, found as transformers looks for
// them (model.safetensors, else model.safetensors.index.json and its shards, else
// pytorch_model.bin, else pytorch_model.bin.index.json and its shards), and what the
// safetensors ones hold by their headers alone: for the reader of the weights and for the
// checks that come before it (a config.json's sizes against the weights).
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

namespace unitrain {

struct HfWeightFiles {
  std::string index;               ///< the index's path; "" for one file
  std::vector<std::string> files;  ///< the files' paths, in the order the index first names them
  /// With an index: the tensors it names in each file (sorted), beside `files`.
  std::vector<std::vector<std::string>> names;
  bool safetensors = false;
  /// How a message names the weights: "model.safetensors" or "model.safetensors.index.json".
  std::string label() const;
};

/// Whether folder `dir` holds a Hugging Face model's weights (one of the files above).
bool has_hf_weights(const std::string& dir);

/// The weight files of folder `dir`. ConfigError naming `key` and the file for a folder without
/// weights, an index that is not JSON or has no weight_map, maps a tensor to something that is
/// not a file name in the folder, or names a shard that is missing.
HfWeightFiles hf_weight_files(const std::string& dir, const std::string& key);

/// One tensor of the weights, by the header of its file.
struct HfTensorHeader {
  std::string file;  ///< the file's name in the folder ("model-00001-of-00002.safetensors")
  std::string name;
  c10::ScalarType dtype;
  std::vector<int64_t> shape;
};

/// The tensors of safetensors weights `files` by their headers, without reading a tensor (empty
/// for pytorch_model.bin files, which have no header to read apart). ConfigError naming `key`
/// and the file for a header that is not valid (read_safetensors_header), or a shard that does
/// not hold a tensor its index names.
std::vector<HfTensorHeader> hf_weight_headers(const HfWeightFiles& files, const std::string& key);

}  // namespace unitrain
