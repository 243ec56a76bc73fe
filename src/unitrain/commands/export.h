#pragma once
// `unitrain export`: a trained run's checkpoint written in a format others read.
#include <cstdint>
#include <string>

#include "unitrain/core/config.h"

namespace unitrain {

/// Writes the model of `checkpoint` to `out` as `format`: state_dict (a dict of tensors for
/// Python's torch.load, names as the model's state_dict()), safetensors (the same tensors and
/// names; metadata {"format": "pt"}) or torchscript (torch.jit.load can run it; built-in and
/// TorchScript models); `weights` as for evaluate_checkpoint. A checkpoint with class names
/// (classes.json) has them written beside `out` (`model.pt` -> `model.classes.json`, the same
/// format), and for safetensors also in the metadata ("classes": a JSON list). Returns the
/// checkpoint folder used.
/// `hf` (gpt2 and llama) writes the folder `out` as hf_export.h says, its weights sharded past
/// `max_shard_bytes`. A LoRA run (model.lora): `hf` writes PEFT's adapter folder
/// (peft_adapter.h), or with `merge` the model with its adapters merged into the weights
/// (W + scaling B A) as a Hugging Face folder; the other formats always write the merged model.
std::string export_checkpoint(const Config& config, const std::string& checkpoint,
                              const std::string& format, const std::string& out,
                              const std::string& weights = "validated",
                              uint64_t max_shard_bytes = 5'000'000'000ULL, bool merge = false);

}  // namespace unitrain
