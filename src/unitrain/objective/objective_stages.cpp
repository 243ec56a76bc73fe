// ObjectiveModule cut into pipeline stages (distributed.pipeline_parallel): its model's units on
// a batch's inputs, the losses on the last unit's output, and what it refuses.
#include <string>
#include <vector>

#include "unitrain/objective/objective_module.h"

namespace unitrain {

torch::Tensor ObjectiveModule::forward_units(const Batch& batch, size_t first, size_t end,
                                             const torch::Tensor& x) {
  std::vector<torch::Tensor> inputs;
  for (const std::string& name : outputs_->inputs()) {
    inputs.push_back(batch_tensor(batch, name, "objective.inputs"));
  }
  return model_->forward_units(inputs, first, end, x);
}

StepOutput ObjectiveModule::loss_of_units(const Batch& batch, const torch::Tensor& out) {
  return losses_of(batch, {out});
}

std::optional<std::string> ObjectiveModule::stage_refusal() {
  const std::string key = "distributed.pipeline_parallel";
  if (model_->units().empty()) {
    return key + ": model " + model_type_ +
           " runs whole (no units: transformer_lm, gpt2 and the llama-shaped models are cut into "
           "stages); set it to 1";
  }
  if (auto why = model_->stage_refusal()) return why;
  if (teacher_) return key + " with objective.teacher is not built yet; leave one of them out";
  if (outputs_->predictions().size() != 1) {
    return key + ": objective.predictions names " + std::to_string(outputs_->predictions().size()) +
           " predictions; a pipeline's last stage passes one to the loss";
  }
  if (losses_.size() != 1) {
    return key + ": objective.losses has " + std::to_string(losses_.size()) +
           " terms; under a pipeline the last stage computes one loss (its terms would be "
           "metrics only it holds): keep one";
  }
  if (!regularizers_.empty()) {
    return key +
           ": objective.regularizers need every stage's parameters in the loss; leave "
           "them out (optimizer.args.weight_decay decays the weights where they are)";
  }
  if (!metrics_.empty()) {
    return key +
           ": objective.metrics are not built yet under a pipeline (the last stage alone "
           "holds the predictions); leave them out";
  }
  return std::nullopt;
}

}  // namespace unitrain
