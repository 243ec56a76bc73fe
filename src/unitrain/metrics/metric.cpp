#include "unitrain/metrics/metric.h"

#include <mutex>

#include "unitrain/metrics/shape_check.h"

namespace unitrain {
namespace {

const char* kMetricClassExpects =
    "expects class scores [B, C] with class indices [B] (or [B, 1]), or [B, T, C] with [B, T]; "
    "for one binary logit use [B] or [B, 1] with 0/1 targets";
const char* kMetricElementwiseExpects =
    "expects a prediction of the target's shape ([B, 1] vs [B] is accepted)";

// Items that count: targets other than kIgnoreIndex.
torch::Tensor counted(const torch::Tensor& index_target) { return index_target != kIgnoreIndex; }

// A share of `hits` among `mask`, weighted by the number of counted items.
MetricValue fraction(const torch::Tensor& hits, const torch::Tensor& mask) {
  double count = static_cast<double>(mask.sum().item<int64_t>());
  torch::Tensor correct = (hits & mask).sum().to(torch::kDouble);
  return {correct / std::max(count, 1.0), count};
}

double rows(const torch::Tensor& t) { return t.dim() == 0 ? 1.0 : static_cast<double>(t.size(0)); }

bool is_binary_logit(const torch::Tensor& logits) {
  return logits.dim() <= 1 || (logits.size(-1) == 1);
}

struct TopKArgs {
  int64_t k = 5;
};

}  // namespace

std::optional<MetricDirection> MetricRegistry::direction(const std::string& name) const {
  auto it = directions_.find(name);
  if (it == directions_.end()) return std::nullopt;
  return it->second;
}

MetricRegistry& metric_registry() {
  static MetricRegistry registry;
  return registry;
}

namespace metrics {

MetricValue accuracy(const torch::Tensor& logits_in, const torch::Tensor& target_in) {
  torch::NoGradGuard no_grad;
  torch::Tensor logits = logits_in.detach(), target = target_in.detach();
  if (is_binary_logit(logits)) {
    // One logit per item: a positive logit predicts class 1.
    torch::Tensor t = elementwise_target(logits, target, "metric", "accuracy", kMetricClassExpects);
    torch::Tensor hits = (logits > 0) == (t > 0.5);
    return {hits.to(torch::kDouble).mean(), static_cast<double>(hits.numel())};
  }
  torch::Tensor t = class_index_target(logits, target, "metric", "accuracy", kMetricClassExpects);
  return fraction(logits.argmax(-1) == t, counted(t));
}

MetricValue top_k_accuracy(const torch::Tensor& logits_in, const torch::Tensor& target_in,
                           int64_t k) {
  torch::NoGradGuard no_grad;
  torch::Tensor logits = logits_in.detach();
  torch::Tensor t =
      class_index_target(logits, target_in.detach(), "metric", "top_k_accuracy",
                         "expects class scores [B, C] with class indices [B], or [B, T, C] "
                         "with [B, T]");
  UT_CHECK(k >= 1 && k <= logits.size(-1), "metric 'top_k_accuracy': k = ", k,
           " must be between 1 and the number of classes (", logits.size(-1), "); lower args.k");
  torch::Tensor top = std::get<1>(logits.topk(k, -1));
  torch::Tensor hits = (top == t.unsqueeze(-1)).any(-1);
  return fraction(hits, counted(t));
}

MetricValue mse(const torch::Tensor& pred_in, const torch::Tensor& target) {
  torch::NoGradGuard no_grad;
  torch::Tensor pred = pred_in.detach();
  torch::Tensor t =
      elementwise_target(pred, target.detach(), "metric", "mse", kMetricElementwiseExpects);
  return {(pred - t).square().to(torch::kDouble).mean(), rows(pred)};
}

MetricValue mae(const torch::Tensor& pred_in, const torch::Tensor& target) {
  torch::NoGradGuard no_grad;
  torch::Tensor pred = pred_in.detach();
  torch::Tensor t =
      elementwise_target(pred, target.detach(), "metric", "mae", kMetricElementwiseExpects);
  return {(pred - t).abs().to(torch::kDouble).mean(), rows(pred)};
}

MetricValue perplexity(const torch::Tensor& logits_in, const torch::Tensor& target) {
  torch::NoGradGuard no_grad;
  torch::Tensor logits = logits_in.detach();
  torch::Tensor t = class_index_target(
      logits, target.detach(), "metric", "perplexity",
      "expects token logits [B, T, V] with token ids [B, T] (or [B, V] with [B])");
  torch::Tensor flat_logits = logits.reshape({-1, logits.size(-1)}).to(torch::kDouble);
  torch::Tensor flat_t = t.reshape({-1});
  torch::Tensor nll_sum;
  try {
    nll_sum = at::cross_entropy_loss(flat_logits, flat_t, {}, at::Reduction::Sum, kIgnoreIndex);
  } catch (const c10::Error& e) {
    throw PredictionTargetError("metric", "perplexity", e.what_without_backtrace());
  }
  double count = static_cast<double>(counted(flat_t).sum().item<int64_t>());
  return {nll_sum / std::max(count, 1.0), count, /*exp=*/true};
}

}  // namespace metrics

void register_builtin_metrics() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& r = metric_registry();
    auto fixed = [&r](const std::string& name, const std::string& help, MetricDirection direction,
                      MetricValue (*fn)(const torch::Tensor&, const torch::Tensor&)) {
      r.add(name, help, direction, Schema(), [fn](const Config&) { return MetricFn(fn); });
    };
    constexpr MetricDirection kHigher = MetricDirection::HigherIsBetter;
    constexpr MetricDirection kLower = MetricDirection::LowerIsBetter;
    fixed("accuracy",
          "share of items whose largest score is the target class (tokens for [B, T, C]; "
          "one logit > 0 for binary); targets -100 are skipped",
          kHigher, &metrics::accuracy);
    fixed("mse", "mean squared error", kLower, &metrics::mse);
    fixed("mae", "mean absolute error", kLower, &metrics::mae);
    fixed("perplexity",
          "exp of the mean token cross entropy over the pass; targets -100 are skipped", kLower,
          &metrics::perplexity);
    Options<TopKArgs> top_k;
    top_k.field("k", &TopKArgs::k)
        .min(1)
        .help("how many of the largest scores may hold the target");
    r.add("top_k_accuracy", "share of items whose target is among the k largest scores", kHigher,
          std::move(top_k), [](const TopKArgs& a) {
            return MetricFn([k = a.k](const torch::Tensor& pred, const torch::Tensor& target) {
              return metrics::top_k_accuracy(pred, target, k);
            });
          });
  });
}

}  // namespace unitrain
