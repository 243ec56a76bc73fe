// Warmup-then-decay schedules, written from transformers' get_*_schedule_with_warmup
// (transformers/optimization.py); the parity test checks them against those definitions.
#include <algorithm>
#include <cmath>
#include <spdlog/spdlog.h>

#include "unitrain/optim/builtin_schedules.h"

namespace unitrain::schedules {
namespace {

Schema with_warmup() {
  Schema s;
  add_warmup_field(s);
  return s;
}

Schema with_warmup_and_total() {
  Schema s = with_warmup();
  add_total_field(s);
  return s;
}

// Fraction of the decay phase done after `steps` (may exceed 1 past `total`).
/// The warmup in scheduler steps; a warning when it outlasts the run, whose lr then never
/// reaches its base value.
int64_t warmup_steps(const Config& args, const ScheduleContext& ctx) {
  const int64_t warmup = arg_steps(args, "warmup", ctx);
  if (ctx.total_steps > 0 && warmup > ctx.total_steps) {
    const char* unit = ctx.per_epoch ? "epochs" : "optimizer steps";
    spdlog::warn("{} is '{}' = {} {}, longer than the whole run ({} {}): the learning rate never "
                 "reaches optimizer.lr; shorten the warmup or lengthen train.max_length",
                 args.key_path("warmup"), args.get_duration("warmup").str(), warmup, unit,
                 ctx.total_steps, unit);
  }
  return warmup;
}

double progress(int64_t steps, int64_t warmup, int64_t total) {
  return static_cast<double>(steps - warmup) /
         static_cast<double>(std::max<int64_t>(1, total - warmup));
}

void register_constant() {
  scheduler_registry().add(
      "constant",
      "the base lr, after an optional linear warmup (get_constant_schedule_with_warmup)",
      with_warmup(), [](const Config& args, const ScheduleContext& ctx) -> SchedulerPtr {
        const int64_t warmup = warmup_steps(args, ctx);
        return std::make_unique<LambdaSchedule>(
            [warmup](int64_t s) { return s < warmup ? warmup_factor(s, warmup) : 1.0; });
      });
}

void register_linear() {
  Schema s = with_warmup_and_total();
  s.add("min_lr_ratio", Type::Float)
      .def(0.0)
      .min(0)
      .max(1)
      .help("final lr as a fraction of the base lr");
  scheduler_registry().add(
      "linear",
      "linear warmup, then linear decay to min_lr_ratio (get_linear_schedule_with_warmup)",
      std::move(s), [](const Config& args, const ScheduleContext& ctx) -> SchedulerPtr {
        const int64_t warmup = warmup_steps(args, ctx);
        const int64_t total = run_length(args, "total", ctx);
        const double min_ratio = args.get_double("min_lr_ratio");
        return std::make_unique<LambdaSchedule>([=](int64_t s) {
          if (s < warmup) return warmup_factor(s, warmup);
          const double left =
              std::max(0.0, static_cast<double>(total - s) /
                                static_cast<double>(std::max<int64_t>(1, total - warmup)));
          return min_ratio + (1.0 - min_ratio) * left;
        });
      });
}

void register_cosine() {
  Schema s = with_warmup_and_total();
  s.add("min_lr_ratio", Type::Float)
      .def(0.0)
      .min(0)
      .max(1)
      .help("lowest lr as a fraction of the base lr");
  s.add("num_cycles", Type::Float)
      .def(0.5)
      .gt(0)
      .help("cosine periods over the decay (0.5 = down to the minimum once)");
  scheduler_registry().add(
      "cosine",
      "linear warmup, then cosine decay (get_cosine_schedule_with_warmup; with min_lr_ratio, "
      "get_cosine_with_min_lr_schedule_with_warmup)",
      std::move(s), [](const Config& args, const ScheduleContext& ctx) -> SchedulerPtr {
        const int64_t warmup = warmup_steps(args, ctx);
        const int64_t total = run_length(args, "total", ctx);
        const double min_ratio = args.get_double("min_lr_ratio");
        const double cycles = args.get_double("num_cycles");
        return std::make_unique<LambdaSchedule>([=](int64_t s) {
          if (s < warmup) return warmup_factor(s, warmup);
          const double f = 0.5 * (1.0 + std::cos(kPi * cycles * 2.0 * progress(s, warmup, total)));
          return std::max(0.0, f * (1 - min_ratio) + min_ratio);
        });
      });
}

void register_cosine_restarts() {
  Schema s = with_warmup_and_total();
  s.add("cycles", Type::Int).def(1).min(1).help("number of hard restarts of the cosine decay");
  scheduler_registry().add(
      "cosine_restarts",
      "linear warmup, then cosine decays with hard restarts, 0 after total "
      "(get_cosine_with_hard_restarts_schedule_with_warmup)",
      std::move(s), [](const Config& args, const ScheduleContext& ctx) -> SchedulerPtr {
        const int64_t warmup = warmup_steps(args, ctx);
        const int64_t total = run_length(args, "total", ctx);
        const double cycles = static_cast<double>(args.get_int("cycles"));
        return std::make_unique<LambdaSchedule>([=](int64_t s) {
          if (s < warmup) return warmup_factor(s, warmup);
          const double p = progress(s, warmup, total);
          if (p >= 1.0) return 0.0;
          return std::max(0.0, 0.5 * (1.0 + std::cos(kPi * std::fmod(cycles * p, 1.0))));
        });
      });
}

void register_polynomial() {
  Schema s = with_warmup_and_total();
  s.add("power", Type::Float).def(1.0).gt(0).help("exponent of the decay (1 = linear)");
  s.add("lr_end", Type::Float).def(1e-7).min(0).help("final lr (absolute, below optimizer.lr)");
  scheduler_registry().add(
      "polynomial",
      "linear warmup, then polynomial decay to lr_end (get_polynomial_decay_schedule_with_warmup)",
      std::move(s), [](const Config& args, const ScheduleContext& ctx) -> SchedulerPtr {
        const int64_t warmup = warmup_steps(args, ctx);
        const int64_t total = run_length(args, "total", ctx);
        const double power = args.get_double("power");
        const double lr_end = args.get_double("lr_end");
        const double lr_init = ctx.base_lr;
        UT_CHECK(lr_init > 0,
                 "scheduler 'polynomial' needs the optimizer's base lr "
                 "(ScheduleContext::base_lr) to turn ",
                 args.key_path("lr_end"), " into a ratio");
        UT_CHECK(lr_end < lr_init, args.key_path("lr_end"), " (", lr_end,
                 ") must be smaller than the base lr optimizer.lr (", lr_init, ")");
        return std::make_unique<LambdaSchedule>([=](int64_t s) {
          if (s < warmup) return warmup_factor(s, warmup);
          if (s > total) return lr_end / lr_init;
          const double decay_steps = static_cast<double>(std::max<int64_t>(1, total - warmup));
          const double remaining = 1 - static_cast<double>(s - warmup) / decay_steps;
          return ((lr_init - lr_end) * std::pow(remaining, power) + lr_end) / lr_init;
        });
      });
}

void register_inverse_sqrt() {
  Schema s = with_warmup();
  s.add("timescale", Type::Duration)
      .nullable()
      .help("decay time scale (null = warmup, or 10000 steps without warmup)");
  scheduler_registry().add(
      "inverse_sqrt",
      "linear warmup, then decay as 1/sqrt(step / timescale) (get_inverse_sqrt_schedule)",
      std::move(s), [](const Config& args, const ScheduleContext& ctx) -> SchedulerPtr {
        const int64_t warmup = warmup_steps(args, ctx);
        int64_t timescale = warmup > 0 ? warmup : 10000;
        if (args.has("timescale")) {
          timescale = arg_steps(args, "timescale", ctx);
          UT_CHECK(timescale > 0, args.key_path("timescale"),
                   " must be at least one scheduler step, got '",
                   args.get_duration("timescale").str(), "'");
        }
        return std::make_unique<LambdaSchedule>([=](int64_t s) {
          if (s < warmup) return warmup_factor(s, warmup);
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
