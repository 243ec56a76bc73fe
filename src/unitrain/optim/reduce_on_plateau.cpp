// reduce_on_plateau: torch.optim.lr_scheduler.ReduceLROnPlateau (PyTorch 1.13) as a multiplier.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "unitrain/core/options.h"
#include "unitrain/optim/builtin_schedules.h"

namespace unitrain::schedules {
namespace {

struct PlateauOptions {
  std::string metric = "val/loss";
  bool maximize = false;
  bool relative = true;
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;
  int64_t cooldown = 0;
  double min_factor = 0;         ///< lowest multiplier
  std::optional<double> min_lr;  ///< lowest lr, absolute: sets min_factor for the base lr
  double lr_unit = 1;            ///< the base lr, so eps compares lrs as PyTorch does
  double eps = 1e-8;

  static void declare(Options<PlateauOptions>& o) {
    using T = PlateauOptions;
    o.field("metric", &T::metric).help("the logged metric to watch");
    o.field("mode", &T::maximize, {{"min", false}, {"max", true}})
        .help("whether lower or higher is better");
    o.field("factor", &T::factor).gt(0).max(1).help("multiplier applied on a plateau (< 1)");
    o.field("patience", &T::patience)
        .min(0)
        .help("observations without improvement before reducing");
    o.field("threshold", &T::threshold).min(0).help("least change that counts as an improvement");
    o.field("threshold_mode", &T::relative, {{"rel", true}, {"abs", false}})
        .help("threshold relative to the best value or absolute");
    o.field("cooldown", &T::cooldown).min(0).help("observations to wait after a reduction");
    o.field("min_lr_ratio", &T::min_factor)
        .min(0)
        .max(1)
        .help("lowest lr as a fraction of the base lr");
    o.field("min_lr", &T::min_lr).min(0).help("lowest lr, absolute (overrides min_lr_ratio)");
    o.field("eps", &T::eps).min(0).help("reductions smaller than this (in lr) are skipped");
    o.check([](T& p, const Config& c) {
      UT_CHECK(p.factor < 1, c.key_path("factor"), " must be < 1, got ", p.factor);
    });
  }
};

/// Multiplies the lr by `factor` when the metric has not improved for more than `patience`
/// observations, then waits `cooldown` observations; never below min_factor.
class ReduceOnPlateau : public Scheduler {
 public:
  explicit ReduceOnPlateau(PlateauOptions o) : o_(std::move(o)), best_(worst()) {}

  double factor(int64_t) const override { return factor_; }
  bool needs_metric() const override { return true; }
  std::string monitored_metric() const override { return o_.metric; }

  void observe(double value) override {
    if (is_better(value)) {
      best_ = value;
      bad_ = 0;
    } else {
      ++bad_;
    }
    if (cooldown_left_ > 0) {
      --cooldown_left_;
      bad_ = 0;  // bad observations during cooldown do not count
    }
    if (bad_ > o_.patience) {
      const double reduced = std::max(factor_ * o_.factor, o_.min_factor);
      if ((factor_ - reduced) * o_.lr_unit > o_.eps) factor_ = reduced;
      cooldown_left_ = o_.cooldown;
      bad_ = 0;
    }
  }

  std::map<std::string, double> state() const override {
    return {{"factor", factor_},
            {"best", best_},
            {"num_bad", static_cast<double>(bad_)},
            {"cooldown_left", static_cast<double>(cooldown_left_)}};
  }

  void load_state(const std::map<std::string, double>& state) override {
    auto get = [&](const char* key) {
      auto it = state.find(key);
      UT_CHECK(it != state.end(), "reduce_on_plateau state has no '", key, "' entry");
      return it->second;
    };
    factor_ = get("factor");
    best_ = get("best");
    bad_ = static_cast<int64_t>(get("num_bad"));
    cooldown_left_ = static_cast<int64_t>(get("cooldown_left"));
  }

 private:
  double worst() const {
    const double inf = std::numeric_limits<double>::infinity();
    return o_.maximize ? -inf : inf;
  }
  bool is_better(double a) const {
    if (o_.maximize) return o_.relative ? a > best_ * (o_.threshold + 1) : a > best_ + o_.threshold;
    return o_.relative ? a < best_ * (1 - o_.threshold) : a < best_ - o_.threshold;
  }

  PlateauOptions o_;
  double factor_ = 1.0;
  double best_;
  int64_t bad_ = 0;
  int64_t cooldown_left_ = 0;
};

}  // namespace

void register_reduce_on_plateau() {
  scheduler_registry().add<PlateauOptions>(
      "reduce_on_plateau",
      "multiply by factor when a validation metric stops improving (ReduceLROnPlateau)",
      [](PlateauOptions o, const Config& at, const ScheduleContext& ctx) -> SchedulerPtr {
        if (o.min_lr) {
          UT_CHECK(ctx.base_lr > 0,
                   "scheduler 'reduce_on_plateau' needs the optimizer's base lr "
                   "(ScheduleContext::base_lr) to use ",
                   at.key_path("min_lr"), "; or set min_lr_ratio");
          o.min_factor = *o.min_lr / ctx.base_lr;
        }
        o.lr_unit = ctx.base_lr > 0 ? ctx.base_lr : 1.0;
        return std::make_unique<ReduceOnPlateau>(std::move(o));
      });
}

}  // namespace unitrain::schedules
