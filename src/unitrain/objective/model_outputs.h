#pragma once
// ModelOutputs: a Model run on named batch tensors, its outputs named — for the student of an
// ObjectiveModule and for a teacher alike.
#include <string>
#include <vector>

#include "unitrain/core/batch.h"
#include "unitrain/models/model.h"

namespace unitrain {

/// Passes the batch tensors named `inputs` to a Model, in order, and returns its outputs in the
/// order of `predictions`: positionally, or by name for a model that names its outputs (a
/// TorchScript module returning a dict; matched once, at the first run).
/// Throws ConfigError for a batch missing an input (listing the batch keys), a model returning
/// another number of outputs than `predictions` lists, or a named model without one of them.
/// Error messages name the model as `what` ("model 'cnn'") and the keys as `<section>.inputs`
/// and `<section>.predictions`.
class ModelOutputs {
 public:
  ModelOutputs(std::string what, std::string section, std::vector<std::string> inputs,
               std::vector<std::string> predictions);

  std::vector<torch::Tensor> run(Model& model, const Batch& batch);

  const std::vector<std::string>& inputs() const { return inputs_; }
  const std::vector<std::string>& predictions() const { return predictions_; }

 private:
  std::string what_, section_, inputs_key_;
  std::vector<std::string> inputs_, predictions_;
  std::vector<size_t> output_order_;  ///< named model outputs: the index of each prediction
};

/// "a, b, c", or "(none)" for no names.
std::string join_names(const std::vector<std::string>& names);

/// The batch's tensor `name`; without it a ConfigError naming `key` + `suffix` (built only
/// then) and listing the batch keys.
const torch::Tensor& batch_tensor(const Batch& batch, const std::string& name,
                                  const std::string& key, const char* suffix = "");

}  // namespace unitrain
