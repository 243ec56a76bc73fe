#include "unitrain/engine/step/module_error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/torch.h>

#include <unordered_set>

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/parallel/collective_error.h"

namespace unitrain {

void rethrow_module_error(const std::string& where, const std::string& hint) {
  const std::string prefix = where + (hint.empty() ? "" : " " + hint) + " failed: ";
  try {
    throw;
  } catch (const ConfigError& e) {
    throw ConfigError(prefix + e.what());
  } catch (const CollectiveError& e) {  // not the module's failure: a peer's
    throw CollectiveError("lost a process in " + where + ": " + e.what());
  } catch (const std::exception& e) {
    throw TrainError(prefix + error_text(e, 1000));
  } catch (...) {
    throw TrainError(prefix + "an exception that is not a std::exception");
  }
}

std::vector<torch::Tensor> leaves_outside(const torch::Tensor& loss,
                                          const std::vector<torch::Tensor>& known) {
  std::vector<torch::Tensor> out;
  if (!loss.defined() || !loss.grad_fn()) return out;
  std::unordered_set<const c10::TensorImpl*> ours;
  for (const auto& t : known) ours.insert(t.unsafeGetTensorImpl());
  std::unordered_set<const torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> todo{loss.grad_fn().get()};
  while (!todo.empty()) {
    torch::autograd::Node* node = todo.back();
    todo.pop_back();
    if (!seen.insert(node).second) continue;
    // A leaf that requires grad enters the graph through its AccumulateGrad node.
    if (const auto* leaf = dynamic_cast<const torch::autograd::AccumulateGrad*>(node)) {
      // Empty ones hold nothing to train: the anchors activation checkpointing and ZeRO 3's
      // units hang their nodes on.
      const torch::Tensor& t = leaf->variable;
      if (t.numel() > 0 && !ours.count(t.unsafeGetTensorImpl())) out.push_back(t);
      continue;
    }
    for (const auto& edge : node->next_edges()) {
      if (edge.function) todo.push_back(edge.function.get());
    }
  }
  return out;
}

std::string stray_leaves_warning(const std::vector<torch::Tensor>& stray) {
  if (stray.empty()) return "";
  std::vector<std::string> shapes;
  int64_t elements = 0;
  for (const auto& t : stray) {
    if (shapes.size() < 8) shapes.push_back(fmt::format("[{}]", fmt::join(t.sizes(), ", ")));
    elements += t.numel();
  }
  return fmt::format(
      "{} tensor(s) that require grad reach the loss but are not parameters of the module ({}{}; "
      "{} elements): they get gradients, but no optimizer built from the module's parameters "
      "updates them and no checkpoint saves them. A layer kept as a member must be registered: "
      "register_module(\"name\", layer) (register_parameter for a tensor)",
      stray.size(), fmt::join(shapes, ", "), stray.size() > shapes.size() ? ", ..." : "", elements);
}

}  // namespace unitrain
