#include "unitrain/objective/loss.h"

#include <mutex>

#include "unitrain/metrics/shape_check.h"

namespace unitrain {
namespace {

const char* kClassExpects =
    "expects logits [B, C] with class indices [B] (or [B, 1]), logits [B, T, C] with class "
    "indices [B, T] (the class dimension is last), or class probabilities of the logits' shape";
const char* kLogProbExpects =
    "expects log-probabilities [B, C] with class indices [B] (or [B, 1]), or [B, T, C] with "
    "[B, T] (the class dimension is last)";
const char* kElementwiseExpects =
    "expects a prediction of the target's shape; [B, 1] vs [B] is accepted, nothing else is "
    "broadcast (reshape the model output or the target to match)";

// Runs a torch loss, turning its errors (class index out of range, bad dtype) into a
// PredictionTargetError that names the loss and both shapes.
template <typename F>
torch::Tensor guarded(const std::string& type, const torch::Tensor& pred,
                      const torch::Tensor& target, F&& compute) {
  try {
    return compute();
  } catch (const c10::Error& e) {
    throw PredictionTargetError("loss", type,
                                "prediction shape " + shape_str(pred.sizes()) + ", target shape " +
                                    shape_str(target.sizes()) + ": " + e.what_without_backtrace());
  }
}

// Cross entropy / NLL over the last dimension, flattening sequences to [B*T, C]; the mean is
// over targets other than ignore_index, as PyTorch computes it (NaN when there are none).
torch::Tensor class_loss(const std::string& type, const torch::Tensor& pred,
                         const torch::Tensor& target, int64_t ignore_index,
                         double label_smoothing) {
  const bool log_probs = type == "nll";
  if (!log_probs && target.is_floating_point() && target.sizes() == pred.sizes() &&
      pred.dim() >= 2) {
    // Class probabilities: the mean over rows.
    return guarded(type, pred, target, [&] {
      torch::Tensor p = pred.reshape({-1, pred.size(-1)});
      torch::Tensor t = target.reshape({-1, pred.size(-1)}).to(pred.scalar_type());
      return at::cross_entropy_loss(p, t, {}, at::Reduction::Mean, ignore_index, label_smoothing);
    });
  }
  torch::Tensor t =
      class_index_target(pred, target, "loss", type, log_probs ? kLogProbExpects : kClassExpects);
  return guarded(type, pred, target, [&] {
    torch::Tensor p = pred.reshape({-1, pred.size(-1)});
    torch::Tensor flat_t = t.reshape({-1});
    return log_probs ? at::nll_loss(p, flat_t, {}, at::Reduction::Mean, ignore_index)
                     : at::cross_entropy_loss(p, flat_t, {}, at::Reduction::Mean, ignore_index,
                                              label_smoothing);
  });
}

// An element-wise loss after the shape check of elementwise_target.
template <typename F>
LossFn elementwise(const std::string& type, F compute) {
  return [type, compute](const torch::Tensor& pred, const torch::Tensor& target) {
    torch::Tensor t = elementwise_target(pred, target, "loss", type, kElementwiseExpects);
    return guarded(type, pred, target, [&] { return compute(pred, t); });
  };
}

}  // namespace

Registry<LossFn>& loss_registry() {
  static Registry<LossFn> registry("loss");
  return registry;
}

void register_builtin_losses() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& r = loss_registry();

    Schema ce;
    ce.add("label_smoothing", Type::Float)
        .def(0.0)
        .min(0)
        .max(1)
        .help("mix the one-hot target with the uniform distribution by this share");
    ce.add("ignore_index", Type::Int)
        .def(kIgnoreIndex)
        .help("targets equal to this index add nothing and are not counted in the mean");
    r.add("cross_entropy",
          "softmax cross entropy of logits [B, C] or [B, T, C] with class indices (or "
          "probabilities); mean over counted targets",
          std::move(ce), [](const Config& args) {
            int64_t ignore = args.get_int("ignore_index");
            double smoothing = args.get_double("label_smoothing");
            return LossFn([=](const torch::Tensor& pred, const torch::Tensor& target) {
              return class_loss("cross_entropy", pred, target, ignore, smoothing);
            });
          });

    Schema nll;
    nll.add("ignore_index", Type::Int)
        .def(kIgnoreIndex)
        .help("targets equal to this index add nothing and are not counted in the mean");
    r.add("nll", "negative log-likelihood of log-probabilities [B, C] or [B, T, C]", std::move(nll),
          [](const Config& args) {
            int64_t ignore = args.get_int("ignore_index");
            return LossFn([=](const torch::Tensor& pred, const torch::Tensor& target) {
              return class_loss("nll", pred, target, ignore, 0.0);
            });
          });

    r.add("mse", "mean squared error", Schema(), [](const Config&) {
      return elementwise(
          "mse", [](const torch::Tensor& p, const torch::Tensor& t) { return at::mse_loss(p, t); });
    });
    r.add("l1", "mean absolute error", Schema(), [](const Config&) {
      return elementwise(
          "l1", [](const torch::Tensor& p, const torch::Tensor& t) { return at::l1_loss(p, t); });
    });

    Schema smooth;
    smooth.add("beta", Type::Float)
        .def(1.0)
        .min(0)
        .help("below this absolute error the loss is quadratic, above it linear (0: l1)");
    r.add("smooth_l1", "Huber-like loss: quadratic for small errors, linear for large ones",
          std::move(smooth), [](const Config& args) {
            double beta = args.get_double("beta");
            return elementwise("smooth_l1", [beta](const torch::Tensor& p, const torch::Tensor& t) {
              return beta == 0 ? at::l1_loss(p, t)
                               : at::smooth_l1_loss(p, t, at::Reduction::Mean, beta);
            });
          });

    Schema bce;
    bce.add("pos_weight", Type::Float)
        .nullable()
        .gt(0)
        .help("weight of the positive targets' term (e.g. negatives / positives)");
    r.add("bce_with_logits", "binary cross entropy of logits with 0/1 (or soft) targets",
          std::move(bce), [](const Config& args) {
            std::optional<double> pos_weight;
            if (args.has("pos_weight")) pos_weight = args.get_double("pos_weight");
            return elementwise("bce_with_logits",
                               [pos_weight](const torch::Tensor& p, const torch::Tensor& t) {
                                 c10::optional<at::Tensor> pw;
                                 if (pos_weight) pw = torch::full({}, *pos_weight, p.options());
                                 return at::binary_cross_entropy_with_logits(p, t, {}, pw);
                               });
          });
  });
}

}  // namespace unitrain
