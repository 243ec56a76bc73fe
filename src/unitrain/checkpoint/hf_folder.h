#pragma once
// The weights of a Hugging Face model folder: model.safetensors, or its shards named by
// model.safetensors.index.json (pytorch_model.bin and its index too, for older folders), read
// and written as transformers' save_pretrained lays them out.
#include <cstdint>
#include <string>
#include <vector>

#include "unitrain/checkpoint/named_tensors.h"

namespace unitrain {

/// Whether folder `dir` holds a Hugging Face model's weights (one of the files above).
bool is_hf_weights_folder(const std::string& dir);

/// The tensors of the Hugging Face folder `dir`, shard after shard in the index's order.
/// ConfigError naming `key`, the folder and the file for a missing shard, an index that is not
/// JSON or names a tensor its shard does not hold, or a damaged file.
NamedTensors read_hf_weights(const std::string& dir, const std::string& key);

/// Writes `tensors` into the existing folder `dir` as save_pretrained does: model.safetensors
/// when they fit in `max_shard_bytes`, else model-0000i-of-0000n.safetensors, each at most
/// that size (a tensor larger alone is a shard of its own), and model.safetensors.index.json
/// ({"metadata": {"total_size": bytes}, "weight_map": {name: file}}). Each file carries the
/// metadata {"format": "pt"} transformers asks for. Returns the files written. TrainError on an
/// I/O failure.
std::vector<std::string> write_hf_weights(const std::string& dir, const NamedTensors& tensors,
                                          uint64_t max_shard_bytes);

}  // namespace unitrain
