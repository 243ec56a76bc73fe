#pragma once
// A checkpoint of the parameters that train alone (LoRA's adapters): the frozen ones come back
// from where the run first read them, checked against the fingerprint the checkpoint keeps.
#include <torch/nn/module.h>

#include <string>

#include "unitrain/checkpoint/named_tensors.h"

namespace unitrain {

/// The entries of `state` that are parameters of `module` with requires_grad set.
NamedTensors trainable_state(const torch::nn::Module& module, NamedTensors state);
/// `state` with the module's own frozen parameters (requires_grad false) it lacks added, so
/// that a state of the trainable parameters alone loads strictly.
NamedTensors with_frozen_parameters(const torch::nn::Module& module, NamedTensors state);
/// A frozen_fingerprint built tensor by tensor, in the module's parameter order: each tensor's
/// name and shape, then the CRC-32 of its float32 values (`bytes` of them, computed apart: by
/// parts on several ranks, joined with crc32_combine_of).
class FrozenFingerprint {
 public:
  void add(const std::string& name, c10::IntArrayRef shape, uint32_t values_crc, uint64_t bytes);
  /// A whole tensor (read on the CPU, floats widened to float32).
  void add(const std::string& name, const torch::Tensor& t);
  std::string json() const;
  /// `t` (CPU, floats widened to float32, contiguous): the form whose bytes are fingerprinted.
  static torch::Tensor values_form(const torch::Tensor& t);

 private:
  uint32_t crc_ = 0;
  int64_t tensors_ = 0, elements_ = 0;
};

/// What identifies the module's frozen parameters: a JSON object of their count, elements and
/// the CRC-32 of their names, shapes and float32 values (read on the CPU). `values`, when
/// given, holds their values by name in place of the module's own (bf16-true's float32
/// masters, so that the fingerprint is the base's as loaded whatever the run computes in).
std::string frozen_fingerprint(const torch::nn::Module& module,
                               const NamedTensors* values = nullptr);
/// ConfigError naming `path` (the checkpoint's frozen_weights.json, whose text is `saved`)
/// unless `saved` is the fingerprint `now`: the base model changed since the checkpoint.
void check_frozen_fingerprint(const std::string& saved, const std::string& now,
                              const std::string& path);

}  // namespace unitrain
