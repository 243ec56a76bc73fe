#include "unitrain/models/model_checks.h"

#include <torch/torch.h>

#include <sstream>

#include "unitrain/core/error.h"

namespace unitrain::models {

std::string shape_string(const torch::Tensor& t) {
  if (!t.defined()) return "(undefined)";
  std::ostringstream out;
  out << "[";
  for (int64_t i = 0; i < t.dim(); ++i) out << (i ? ", " : "") << t.size(i);
  out << "]";
  return out.str();
}

std::string shapes_string(const std::vector<torch::Tensor>& ts) {
  std::string out;
  for (size_t i = 0; i < ts.size(); ++i) out += (i ? ", " : "") + shape_string(ts[i]);
  return out;
}

void check_input_count(const std::string& model, const std::vector<torch::Tensor>& inputs,
                       size_t min_count, size_t max_count) {
  std::string expected = min_count == max_count
                             ? std::to_string(min_count)
                             : std::to_string(min_count) + " to " + std::to_string(max_count);
  UT_CHECK(inputs.size() >= min_count && inputs.size() <= max_count, model, " takes ", expected,
           " input tensor(s), got ", inputs.size(), " (set objective.inputs to ", expected,
           " batch name(s))");
  for (size_t i = 0; i < inputs.size(); ++i) {
    UT_CHECK(inputs[i].defined(), model, ": input ", i, " is an undefined tensor");
  }
}

std::vector<torch::Tensor> forward_with_context(
    const std::string& model, const std::vector<torch::Tensor>& inputs,
    const std::function<std::vector<torch::Tensor>()>& fn) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    throw ConfigError(detail::concat(model, ": forward failed on input shape(s) ",
                                     shapes_string(inputs), ": ", e.what_without_backtrace()));
  }
}

}  // namespace unitrain::models
