#include "unitrain/objective/model_outputs.h"

#include <algorithm>

#include "unitrain/core/error.h"

namespace unitrain {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out.empty() ? "(none)" : out;
}

const torch::Tensor& batch_tensor(const Batch& batch, const std::string& name,
                                  const std::string& key, const char* suffix) {
  UT_CHECK(batch.has(name), key, suffix, ": the batch has no tensor '", name,
           "'; batch keys: ", join_names(batch.names()));
  return batch.at(name);
}

ModelOutputs::ModelOutputs(std::string what, std::string section, std::vector<std::string> inputs,
                           std::vector<std::string> predictions)
    : what_(std::move(what)),
      section_(std::move(section)),
      inputs_key_(section_ + ".inputs"),
      inputs_(std::move(inputs)),
      predictions_(std::move(predictions)) {}

std::vector<torch::Tensor> ModelOutputs::run(Model& model, const Batch& batch) {
  std::vector<torch::Tensor> inputs;
  for (const auto& name : inputs_) inputs.push_back(batch_tensor(batch, name, inputs_key_));
  std::vector<torch::Tensor> outputs = model.forward_all(inputs);
  if (output_order_.empty()) {
    // Named outputs are matched to the predictions once (a TorchScript model knows its names
    // after its first forward); unnamed ones are taken in order.
    const std::vector<std::string> names = model.prediction_names();
    if (names.empty()) {
      UT_CHECK(outputs.size() == predictions_.size(), what_, " returned ", outputs.size(),
               " output(s) but ", section_, ".predictions lists ", predictions_.size(), " (",
               join_names(predictions_), "); list one name per output, in order");
      return outputs;
    }
    UT_CHECK(names.size() == outputs.size(), what_, " returned ", outputs.size(),
             " output(s) but names ", names.size(), " (", join_names(names), ")");
    for (const auto& p : predictions_) {
      auto at = std::find(names.begin(), names.end(), p);
      UT_CHECK(at != names.end(), section_, ".predictions: ", what_, " has no output '", p,
               "'; its outputs are: ", join_names(names));
      output_order_.push_back(static_cast<size_t>(at - names.begin()));
    }
  }
  std::vector<torch::Tensor> ordered;
  for (size_t i : output_order_) {
    UT_CHECK(i < outputs.size(), what_, " returned ", outputs.size(),
             " output(s), fewer than its first forward");
    ordered.push_back(outputs[i]);
  }
  return ordered;
}

}  // namespace unitrain
