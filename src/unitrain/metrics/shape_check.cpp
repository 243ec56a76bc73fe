#include "unitrain/metrics/shape_check.h"

#include <sstream>

namespace unitrain {

PredictionTargetError::PredictionTargetError(std::string kind, std::string type, std::string detail)
    : ConfigError(kind + " '" + type + "': " + detail),
      kind_(std::move(kind)),
      type_(std::move(type)),
      detail_(std::move(detail)) {}

std::string PredictionTargetError::named(const std::string& prediction,
                                         const std::string& target) const {
  return kind_ + " '" + type_ + "' (prediction '" + prediction + "' vs target '" + target +
         "'): " + detail_;
}

std::string shape_str(at::IntArrayRef sizes) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << "]";
  return out.str();
}

void throw_shape_mismatch(const std::string& kind, const std::string& type,
                          const torch::Tensor& pred, const torch::Tensor& target,
                          const std::string& expects) {
  throw PredictionTargetError(kind, type,
                              "prediction shape " + shape_str(pred.sizes()) +
                                  " does not fit target shape " + shape_str(target.sizes()) + "; " +
                                  type + " " + expects);
}

torch::Tensor class_index_target(const torch::Tensor& pred, const torch::Tensor& target,
                                 const std::string& kind, const std::string& type,
                                 const std::string& expects) {
  auto fail = [&]() { throw_shape_mismatch(kind, type, pred, target, expects); };
  if (pred.dim() < 2) fail();
  auto leading = pred.sizes().slice(0, pred.dim() - 1);
  torch::Tensor t = target;
  if (t.dim() == pred.dim() && t.size(-1) == 1 && t.sizes().slice(0, t.dim() - 1) == leading) {
    t = t.squeeze(-1);
  }
  if (t.sizes() != leading) fail();
  if (t.is_floating_point()) {
    bool whole = torch::equal(t, t.floor());
    if (!whole) {
      throw PredictionTargetError(kind, type,
                                  "target holds fractional values but class indices are "
                                  "expected (target dtype " +
                                      std::string(c10::toString(t.scalar_type())) + ")");
    }
  } else if (t.scalar_type() == torch::kBool) {
    fail();
  }
  return t.scalar_type() == torch::kLong ? t : t.to(torch::kLong);
}

torch::Tensor elementwise_target(const torch::Tensor& pred, const torch::Tensor& target,
                                 const std::string& kind, const std::string& type,
                                 const std::string& expects) {
  auto drop_trailing_one = [](at::IntArrayRef s) {
    return s.size() > 0 && s.back() == 1 ? s.slice(0, s.size() - 1) : s;
  };
  bool fits = pred.sizes() == target.sizes() ||
              (pred.dim() == target.dim() + 1 &&
               drop_trailing_one(pred.sizes()) == target.sizes() && pred.size(-1) == 1) ||
              (target.dim() == pred.dim() + 1 &&
               drop_trailing_one(target.sizes()) == pred.sizes() && target.size(-1) == 1);
  if (!fits) throw_shape_mismatch(kind, type, pred, target, expects);
  torch::Tensor t = target.reshape(pred.sizes());
  if (pred.is_floating_point()) t = t.to(pred.scalar_type());
  return t;
}

}  // namespace unitrain
