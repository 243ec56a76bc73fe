#include <mutex>

#include "unitrain/objective/loss.h"

namespace unitrain {
namespace {

// Sums `term(t)` over the tensors; a zero scalar when there are none.
template <typename F>
RegularizerFn summed(F term) {
  return [term](const std::vector<torch::Tensor>& tensors) {
    torch::Tensor total;
    for (const auto& t : tensors) {
      torch::Tensor v = term(t);
      total = total.defined() ? total + v : v;
    }
    return total.defined() ? total : torch::zeros({});
  };
}

}  // namespace

Registry<RegularizerFn>& regularizer_registry() {
  static Registry<RegularizerFn> registry("regularizer");
  return registry;
}

void register_builtin_regularizers() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& r = regularizer_registry();
    r.add(
        "l1", "sum of absolute values, sum |w| (drives weights to exactly zero)", Schema(),
        [](const Config&) { return summed([](const torch::Tensor& t) { return t.abs().sum(); }); });
    // Half the sum of squares, so that weight * l2 has gradient weight * w: a regularizer
    // weight equals the same SGD weight_decay (the 1/2 ||w||^2 convention).
    r.add("l2", "half the sum of squares, sum w^2 / 2 (weight = SGD weight_decay)", Schema(),
          [](const Config&) {
            return summed([](const torch::Tensor& t) { return 0.5 * t.square().sum(); });
          });
  });
}

}  // namespace unitrain
