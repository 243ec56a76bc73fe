// A test plugin: two metrics registered as a user's plugin would (tests/integration/
// metric_direction_test.py). `wer` declares that lower is better; `cer` registers without a
// direction, so monitoring it needs an explicit mode. Both are the share of wrongly classified
// items (class scores [B, C] against class indices [B]).
#include "unitrain/metrics/metric.h"

namespace {

unitrain::MetricValue error_rate(const torch::Tensor& logits, const torch::Tensor& target) {
  torch::Tensor wrong = (logits.detach().argmax(-1) != target.reshape({-1})).to(torch::kDouble);
  return {wrong.mean(), static_cast<double>(wrong.numel())};
}

const bool registered = [] {
  auto factory = [](const unitrain::Config&) { return unitrain::MetricFn(&error_rate); };
  unitrain::metric_registry().add("wer", "share of wrong items (test plugin)",
                                  unitrain::MetricDirection::LowerIsBetter, unitrain::Schema(),
                                  factory);
  unitrain::metric_registry().add("cer", "share of wrong items, no direction (test plugin)",
                                  unitrain::Schema(), factory);
  return true;
}();

}  // namespace
