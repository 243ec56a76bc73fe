// Warmup-then-decay schedules, written from transformers' get_*_schedule_with_warmup
// (transformers/optimization.py); the parity test checks them against those definitions.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "unitrain/optim/builtin_schedules.h"

namespace unitrain::schedules {
namespace {

/// The warmup in scheduler steps; a warning when it outlasts the run, whose lr then never
/// reaches its base value. `at` gives the key path.
int64_t warmup_steps(const WarmupArgs& a, const Config& at, const ScheduleContext& ctx) {
  const int64_t warmup = ctx.to_sched_steps(a.warmup);
  if (ctx.total_steps > 0 && warmup > ctx.total_steps) {
    const char* unit = ctx.per_epoch ? "epochs" : "optimizer steps";
    spdlog::warn(
        "{} is '{}' = {} {}, longer than the whole run ({} {}): the learning rate never "
        "reaches optimizer.lr; shorten the warmup or lengthen train.max_length",
        at.key_path("warmup"), a.warmup.str(), warmup, unit, ctx.total_steps, unit);
  }
  return warmup;
}

/// The decay's length in scheduler steps: `total`, else the whole run.
int64_t total_steps(const WarmupTotalArgs& a, const Config& at, const ScheduleContext& ctx) {
  return run_length(a.total, at.key_path("total"), ctx);
}

/// Linear warmup over `warmup` scheduler steps, then `decay(steps)`.
SchedulerPtr warmup_then(int64_t warmup, std::function<double(int64_t)> decay) {
  return std::make_unique<LambdaSchedule>([warmup, decay = std::move(decay)](int64_t s) {
    return s < warmup ? warmup_factor(s, warmup) : decay(s);
  });
}

// Fraction of the decay phase done after `steps` (may exceed 1 past `total`).
double progress(int64_t steps, int64_t warmup, int64_t total) {
  return static_cast<double>(steps - warmup) /
         static_cast<double>(std::max<int64_t>(1, total - warmup));
}

void register_constant() {
  Options<WarmupArgs> args;
  declare_warmup(args);
  scheduler_registry().add(
      "constant",
      "the base lr, after an optional linear warmup (get_constant_schedule_with_warmup)",
      std::move(args),
      [](const WarmupArgs& a, const Config& at, const ScheduleContext& ctx) -> SchedulerPtr {
        const int64_t warmup = warmup_steps(a, at, ctx);
        return warmup_then(warmup, [](int64_t) { return 1.0; });
      });
}

struct LinearDecayArgs : WarmupTotalArgs {
  double min_lr_ratio = 0;
};

void register_linear() {
  Options<LinearDecayArgs> args;
  declare_warmup_total(args);
  args.field("min_lr_ratio", &LinearDecayArgs::min_lr_ratio)
      .min(0)
      .max(1)
      .help("final lr as a fraction of the base lr");
  scheduler_registry().add(
      "linear",
      "linear warmup, then linear decay to min_lr_ratio (get_linear_schedule_with_warmup)",
      std::move(args),
      [](const LinearDecayArgs& a, const Config& at, const ScheduleContext& ctx) -> SchedulerPtr {
        const int64_t warmup = warmup_steps(a, at, ctx);
        const int64_t total = total_steps(a, at, ctx);
        const double min_ratio = a.min_lr_ratio;
        return warmup_then(warmup, [=](int64_t s) {
          const double left =
              std::max(0.0, static_cast<double>(total - s) /
                                static_cast<double>(std::max<int64_t>(1, total - warmup)));
          return min_ratio + (1.0 - min_ratio) * left;
        });
      });
}

struct CosineDecayArgs : WarmupTotalArgs {
  double min_lr_ratio = 0;
  double num_cycles = 0.5;
};

void register_cosine() {
  Options<CosineDecayArgs> args;
  declare_warmup_total(args);
  args.field("min_lr_ratio", &CosineDecayArgs::min_lr_ratio)
      .min(0)
      .max(1)
      .help("lowest lr as a fraction of the base lr");
  args.field("num_cycles", &CosineDecayArgs::num_cycles)
      .gt(0)
      .help("cosine periods over the decay (0.5 = down to the minimum once)");
  scheduler_registry().add(
      "cosine",
      "linear warmup, then cosine decay (get_cosine_schedule_with_warmup; with min_lr_ratio, "
      "get_cosine_with_min_lr_schedule_with_warmup)",
      std::move(args),
      [](const CosineDecayArgs& a, const Config& at, const ScheduleContext& ctx) -> SchedulerPtr {
        const int64_t warmup = warmup_steps(a, at, ctx);
        const int64_t total = total_steps(a, at, ctx);
        const double min_ratio = a.min_lr_ratio;
        const double cycles = a.num_cycles;
        return warmup_then(warmup, [=](int64_t s) {
          const double f = 0.5 * (1.0 + std::cos(kPi * cycles * 2.0 * progress(s, warmup, total)));
          return std::max(0.0, f * (1 - min_ratio) + min_ratio);
        });
      });
}

struct CosineRestartsArgs : WarmupTotalArgs {
  int64_t cycles = 1;
};

void register_cosine_restarts() {
  Options<CosineRestartsArgs> args;
  declare_warmup_total(args);
  args.field("cycles", &CosineRestartsArgs::cycles)
      .min(1)
      .help("number of hard restarts of the cosine decay");
  scheduler_registry().add("cosine_restarts",
                           "linear warmup, then cosine decays with hard restarts, 0 after total "
                           "(get_cosine_with_hard_restarts_schedule_with_warmup)",
                           std::move(args),
                           [](const CosineRestartsArgs& a, const Config& at,
                              const ScheduleContext& ctx) -> SchedulerPtr {
                             const int64_t warmup = warmup_steps(a, at, ctx);
                             const int64_t total = total_steps(a, at, ctx);
                             const double cycles = static_cast<double>(a.cycles);
                             return warmup_then(warmup, [=](int64_t s) {
                               const double p = progress(s, warmup, total);
                               if (p >= 1.0) return 0.0;
                               return std::max(
                                   0.0, 0.5 * (1.0 + std::cos(kPi * std::fmod(cycles * p, 1.0))));
                             });
                           });
}

struct PolynomialDecayArgs : WarmupTotalArgs {
  double power = 1;
  double lr_end = 1e-7;
};

void register_polynomial() {
  Options<PolynomialDecayArgs> args;
  declare_warmup_total(args);
  args.field("power", &PolynomialDecayArgs::power).gt(0).help("exponent of the decay (1 = linear)");
  args.field("lr_end", &PolynomialDecayArgs::lr_end)
      .min(0)
      .help("final lr (absolute, below optimizer.lr)");
  scheduler_registry().add(
      "polynomial",
      "linear warmup, then polynomial decay to lr_end (get_polynomial_decay_schedule_with_warmup)",
      std::move(args),
      [](const PolynomialDecayArgs& a, const Config& at,
         const ScheduleContext& ctx) -> SchedulerPtr {
        const int64_t warmup = warmup_steps(a, at, ctx);
        const int64_t total = total_steps(a, at, ctx);
        const double power = a.power;
        const double lr_end = a.lr_end;
        const double lr_init = ctx.base_lr;
        UT_CHECK(lr_init > 0,
                 "scheduler 'polynomial' needs the optimizer's base lr "
                 "(ScheduleContext::base_lr) to turn ",
                 at.key_path("lr_end"), " into a ratio");
        UT_CHECK(lr_end < lr_init, at.key_path("lr_end"), " (", lr_end,
                 ") must be smaller than the base lr optimizer.lr (", lr_init, ")");
        return warmup_then(warmup, [=](int64_t s) {
          if (s > total) return lr_end / lr_init;
          const double decay_steps = static_cast<double>(std::max<int64_t>(1, total - warmup));
          const double remaining = 1 - static_cast<double>(s - warmup) / decay_steps;
          return ((lr_init - lr_end) * std::pow(remaining, power) + lr_end) / lr_init;
        });
      });
}

struct InverseSqrtArgs : WarmupArgs {
  std::optional<TrainUnit> timescale;  ///< null: warmup, or 10000 steps without warmup
};

void register_inverse_sqrt() {
  Options<InverseSqrtArgs> args;
  declare_warmup(args);
  args.field("timescale", &InverseSqrtArgs::timescale)
      .help("decay time scale (null = warmup, or 10000 steps without warmup)");
  scheduler_registry().add(
      "inverse_sqrt",
      "linear warmup, then decay as 1/sqrt(step / timescale) (get_inverse_sqrt_schedule)",
      std::move(args),
      [](const InverseSqrtArgs& a, const Config& at, const ScheduleContext& ctx) -> SchedulerPtr {
        const int64_t warmup = warmup_steps(a, at, ctx);
        int64_t timescale = warmup > 0 ? warmup : 10000;
        if (a.timescale) {
          timescale = ctx.to_sched_steps(*a.timescale);
          UT_CHECK(timescale > 0, at.key_path("timescale"),
                   " must be at least one scheduler step, got '", a.timescale->str(), "'");
        }
        return warmup_then(warmup, [=](int64_t s) {
          const int64_t shift = timescale - warmup;
          return 1.0 / std::sqrt(static_cast<double>(s + shift) / static_cast<double>(timescale));
        });
      });
}

}  // namespace

void register_warmup_schedules() {
  register_constant();
  register_linear();
  register_cosine();
  register_cosine_restarts();
  register_polynomial();
  register_inverse_sqrt();
}

}  // namespace unitrain::schedules
