#pragma once
// Input checks shared by the built-in models, so every shape error reads the same way.
#include <torch/types.h>

#include <functional>
#include <string>
#include <vector>

namespace unitrain::models {

/// "[8, 63]".
std::string shape_string(const torch::Tensor& t);
/// "[8, 63], [8]" for several tensors.
std::string shapes_string(const std::vector<torch::Tensor>& ts);

/// ConfigError unless `inputs` holds between `min_count` and `max_count` defined tensors; the
/// message names `model` and says what the model expects (`objective.inputs` lists them).
void check_input_count(const std::string& model, const std::vector<torch::Tensor>& inputs,
                       size_t min_count, size_t max_count);

/// Runs `fn`, turning a c10::Error (a LibTorch shape or dtype failure) into a ConfigError
/// naming `model` and the input shapes.
std::vector<torch::Tensor> forward_with_context(
    const std::string& model, const std::vector<torch::Tensor>& inputs,
    const std::function<std::vector<torch::Tensor>()>& fn);

}  // namespace unitrain::models
