#include "unitrain/objective/loss.h"

#include <algorithm>
#include <mutex>
#include <optional>

#include "unitrain/metrics/shape_check.h"
#include "unitrain/models/model.h"
#include "unitrain/parallel/tensor_parallel.h"

namespace unitrain {
namespace {

const char* kClassExpects =
    "expects logits [B, C] with class indices [B] (or [B, 1]), logits [B, T, C] with class "
    "indices [B, T] (the class dimension is last), or class probabilities of the logits' shape";
const char* kLogProbExpects =
    "expects log-probabilities [B, C] with class indices [B] (or [B, 1]), or [B, T, C] with "
    "[B, T] (the class dimension is last)";
const char* kDistributionExpects =
    "expects student logits [B, C] or [B, T, C] and teacher logits of the same shape (the "
    "class dimension is last)";
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
    // Already [N, C] and [N]: no reshape (on a tiny model a reshape and its backward node
    // cost as much as the loss itself).
    torch::Tensor p = pred.dim() == 2 ? pred : pred.reshape({-1, pred.size(-1)});
    torch::Tensor flat_t = t.dim() == 1 ? t : t.reshape({-1});
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

// Hinton's distillation term T^2 * KL(softmax(t / T) || softmax(s / T)), summed over the classes
// and averaged over the rows ([B, T, C]: over the B * T tokens), as PyTorch's
// kl_div(log_softmax(s / T), softmax(t / T), reduction='batchmean') * T * T on [N, C]. Both
// sides go through log_softmax (log_target): a teacher probability that underflows to 0 adds
// 0, not NaN.
torch::Tensor distillation_loss(const torch::Tensor& student, const torch::Tensor& teacher,
                                double temperature) {
  if (student.dim() < 2 || student.sizes() != teacher.sizes()) {
    throw_shape_mismatch("loss", "kl_div", student, teacher, kDistributionExpects);
  }
  return guarded("kl_div", student, teacher, [&] {
    const int64_t classes = student.size(-1);
    torch::Tensor s = student.reshape({-1, classes});
    torch::Tensor t = teacher.reshape({-1, classes}).to(s.scalar_type());
    if (temperature != 1.0) {
      s = s / temperature;
      t = t / temperature;
    }
    torch::Tensor kl = at::kl_div(at::log_softmax(s, 1), at::log_softmax(t, 1), at::Reduction::Sum,
                                  /*log_target=*/true);
    return kl * (temperature * temperature / static_cast<double>(std::max<int64_t>(s.size(0), 1)));
  });
}

/// The args of nll (and, with label_smoothing, of cross_entropy).
struct ClassLossArgs {
  int64_t ignore_index = kIgnoreIndex;
};
struct CrossEntropyArgs : ClassLossArgs {
  double label_smoothing = 0;
};
struct SmoothL1Args {
  double beta = 1;
};
struct KlDivArgs {
  double temperature = 1;
};
struct BceWithLogitsArgs {
  std::optional<double> pos_weight;  ///< null: 1
};

template <typename T>
void declare_ignore_index(Options<T>& args) {
  args.field("ignore_index", &T::ignore_index)
      .help("targets equal to this index add nothing and are not counted in the mean");
}

}  // namespace

Registry<LossFn>& loss_registry() {
  static Registry<LossFn> registry("loss");
  return registry;
}

namespace {}  // namespace

LossFn vocab_parallel_loss(const Config& section, const VocabSplit& split) {
  const std::string type = component_type(section);
  UT_CHECK(type == "cross_entropy", section.key_path("type"), ": ", type,
           " needs the whole logits, which distributed.tensor_parallel cuts over its ",
           tp::size_of(split.group.get()),
           " processes; the model's logits take cross_entropy alone (computed from each "
           "process's part)");
  CrossEntropyArgs a;
  if (section.has("args")) {
    const Config args = section.at("args");
    if (args.has("ignore_index")) a.ignore_index = args.get_int("ignore_index");
    if (args.has("label_smoothing")) a.label_smoothing = args.get_double("label_smoothing");
  }
  UT_CHECK(a.label_smoothing == 0, section.key_path("args.label_smoothing"), ": ",
           a.label_smoothing,
           " with distributed.tensor_parallel is not computed here (the vocabulary-parallel "
           "cross entropy takes class indices without smoothing); set it to 0");
  return [a, split](const torch::Tensor& pred, const torch::Tensor& target) {
    torch::Tensor t = class_index_target(pred, target, "loss", "cross_entropy", kClassExpects);
    return guarded("cross_entropy", pred, target, [&] {
      const torch::Tensor p = pred.reshape({-1, pred.size(-1)});
      const torch::Tensor flat = t.reshape({-1});
      const torch::Tensor losses = vocab_parallel_cross_entropy(p, flat, split.start, split.group,
                                                                a.ignore_index, split.chunks);
      const torch::Tensor counted = (flat != a.ignore_index).sum();
      // The mean over counted targets; 0, not NaN, when every target is ignored.
      return (losses.sum() / counted.clamp_min(1).to(losses.dtype())).to(pred.scalar_type());
    });
  };
}

namespace {

/// Losses of class indices: cross_entropy, nll.
void add_class_losses(Registry<LossFn>& r) {
  Options<CrossEntropyArgs> ce;
  ce.field("label_smoothing", &CrossEntropyArgs::label_smoothing)
      .min(0)
      .max(1)
      .help("mix the one-hot target with the uniform distribution by this share");
  declare_ignore_index(ce);
  r.add("cross_entropy",
        "softmax cross entropy of logits [B, C] or [B, T, C] with class indices (or "
        "probabilities); mean over counted targets",
        std::move(ce), [](const CrossEntropyArgs& a) {
          return LossFn([a](const torch::Tensor& pred, const torch::Tensor& target) {
            return class_loss("cross_entropy", pred, target, a.ignore_index, a.label_smoothing);
          });
        });

  Options<ClassLossArgs> nll;
  declare_ignore_index(nll);
  r.add("nll", "negative log-likelihood of log-probabilities [B, C] or [B, T, C]", std::move(nll),
        [](const ClassLossArgs& a) {
          return LossFn([a](const torch::Tensor& pred, const torch::Tensor& target) {
            return class_loss("nll", pred, target, a.ignore_index, 0.0);
          });
        });
}

/// Element-wise regression losses: mse, l1, smooth_l1.
void add_regression_losses(Registry<LossFn>& r) {
  r.add("mse", "mean squared error", Schema(), [](const Config&) {
    return elementwise(
        "mse", [](const torch::Tensor& p, const torch::Tensor& t) { return at::mse_loss(p, t); });
  });
  r.add("l1", "mean absolute error", Schema(), [](const Config&) {
    return elementwise(
        "l1", [](const torch::Tensor& p, const torch::Tensor& t) { return at::l1_loss(p, t); });
  });

  Options<SmoothL1Args> smooth;
  smooth.field("beta", &SmoothL1Args::beta)
      .min(0)
      .help("below this absolute error the loss is quadratic, above it linear (0: l1)");
  r.add("smooth_l1", "Huber-like loss: quadratic for small errors, linear for large ones",
        std::move(smooth), [](const SmoothL1Args& a) {
          return elementwise(
              "smooth_l1", [beta = a.beta](const torch::Tensor& p, const torch::Tensor& t) {
                return beta == 0 ? at::l1_loss(p, t)
                                 : at::smooth_l1_loss(p, t, at::Reduction::Mean, beta);
              });
        });
}

/// Losses of logits against logits or soft targets: kl_div (distillation), bce_with_logits.
void add_logit_losses(Registry<LossFn>& r) {
  Options<KlDivArgs> kl;
  kl.field("temperature", &KlDivArgs::temperature)
      .gt(0)
      .help("T: both logits are divided by it before the softmax, the loss multiplied by T^2");
  r.add("kl_div",
        "distillation: T^2 * KL(softmax(target / T) || softmax(prediction / T)) between teacher "
        "logits (target) and student logits [B, C] or [B, T, C]; mean over rows or tokens",
        std::move(kl), [](const KlDivArgs& a) {
          return LossFn([a](const torch::Tensor& pred, const torch::Tensor& target) {
            return distillation_loss(pred, target, a.temperature);
          });
        });

  Options<BceWithLogitsArgs> bce;
  bce.field("pos_weight", &BceWithLogitsArgs::pos_weight)
      .gt(0)
      .help("weight of the positive targets' term (e.g. negatives / positives)");
  r.add("bce_with_logits", "binary cross entropy of logits with 0/1 (or soft) targets",
        std::move(bce), [](const BceWithLogitsArgs& a) {
          return elementwise(
              "bce_with_logits",
              [pos_weight = a.pos_weight](const torch::Tensor& p, const torch::Tensor& t) {
                c10::optional<at::Tensor> pw;
                if (pos_weight) pw = torch::full({}, *pos_weight, p.options());
                return at::binary_cross_entropy_with_logits(p, t, {}, pw);
              });
        });
}

}  // namespace

void register_builtin_losses() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& r = loss_registry();
    add_class_losses(r);
    add_regression_losses(r);
    add_logit_losses(r);
  });
}

}  // namespace unitrain
