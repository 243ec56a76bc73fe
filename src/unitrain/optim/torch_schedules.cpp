// Schedules of torch.optim.lr_scheduler (PyTorch 1.13) in closed form, as multipliers of the
// base lr: StepLR, MultiStepLR, ExponentialLR, OneCycleLR, CosineAnnealingLR.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "unitrain/optim/builtin_schedules.h"

namespace unitrain::schedules {
namespace {

struct StepLrArgs {
  TrainUnit step_size;
  double gamma = 0.1;
};

void register_step() {
  Options<StepLrArgs> args;
  args.field("step_size", &StepLrArgs::step_size)
      .required()
      .help("the lr is multiplied by gamma every step_size, e.g. '30 epochs'");
  args.field("gamma", &StepLrArgs::gamma).gt(0).help("multiplier applied every step_size");
  scheduler_registry().add(
      "step", "multiply by gamma every step_size (StepLR)", std::move(args),
      [](const StepLrArgs& a, const Config& at, const ScheduleContext& ctx) -> SchedulerPtr {
        const int64_t step_size = ctx.to_sched_steps(a.step_size);
        UT_CHECK(step_size > 0, at.key_path("step_size"),
                 " must be at least one scheduler step, got '", a.step_size.str(), "'");
        const double gamma = a.gamma;
        return std::make_unique<LambdaSchedule>(
            [=](int64_t n) { return std::pow(gamma, static_cast<double>(n / step_size)); });
      });
}

struct MultiStepLrArgs {
  std::vector<int64_t> milestones;
  double gamma = 0.1;
};

void register_multistep() {
  Options<MultiStepLrArgs> args;
  args.field("milestones", &MultiStepLrArgs::milestones)
      .required()
      .help("scheduler steps at which the lr is multiplied by gamma");
  args.field("gamma", &MultiStepLrArgs::gamma).gt(0).help("multiplier applied at each milestone");
  args.check([](MultiStepLrArgs& a, const Config& c) {
    for (int64_t m : a.milestones) {
      UT_CHECK(m >= 0, c.key_path("milestones"), " must be scheduler step numbers >= 0, got ", m);
    }
    std::sort(a.milestones.begin(), a.milestones.end());
  });
  scheduler_registry().add(
      "multistep", "multiply by gamma at each milestone (MultiStepLR)", std::move(args),
      [](const MultiStepLrArgs& a, const ScheduleContext&) -> SchedulerPtr {
        return std::make_unique<LambdaSchedule>([a](int64_t n) {
          // Repeated milestones count twice, as in MultiStepLR (bisect_right).
          const auto passed =
              std::upper_bound(a.milestones.begin(), a.milestones.end(), n) - a.milestones.begin();
          return std::pow(a.gamma, static_cast<double>(passed));
        });
      });
}

struct ExponentialLrArgs {
  double gamma = 0;
};

void register_exponential() {
  Options<ExponentialLrArgs> args;
  args.field("gamma", &ExponentialLrArgs::gamma)
      .required()
      .gt(0)
      .help("multiplier applied every scheduler step");
  scheduler_registry().add("exponential", "multiply by gamma every scheduler step (ExponentialLR)",
                           std::move(args),
                           [](const ExponentialLrArgs& a, const ScheduleContext&) -> SchedulerPtr {
                             const double gamma = a.gamma;
                             return std::make_unique<LambdaSchedule>([=](int64_t n) {
                               return std::pow(gamma, static_cast<double>(n));
                             });
                           });
}

struct CosineAnnealingArgs {
  std::optional<TrainUnit> t_max;  ///< null: the whole run
  double eta_min_ratio = 0;
};

void register_cosine_annealing() {
  Options<CosineAnnealingArgs> args;
  args.field("t_max", &CosineAnnealingArgs::t_max)
      .help("half period of the cosine (null = the whole run)");
  args.field("eta_min_ratio", &CosineAnnealingArgs::eta_min_ratio)
      .min(0)
      .max(1)
      .help("lowest lr as a fraction of the base lr");
  scheduler_registry().add(
      "cosine_annealing",
      "cosine from the base lr to eta_min over t_max, then back up (CosineAnnealingLR)",
      std::move(args),
      [](const CosineAnnealingArgs& a, const Config& at,
         const ScheduleContext& ctx) -> SchedulerPtr {
        const double t_max = static_cast<double>(run_length(a.t_max, at.key_path("t_max"), ctx));
        const double eta = a.eta_min_ratio;
        return std::make_unique<LambdaSchedule>([=](int64_t n) {
          return eta + (1.0 - eta) * (1 + std::cos(kPi * static_cast<double>(n) / t_max)) / 2;
        });
      });
}

/// OneCycleLR's phases: from start to end factor, ending at scheduler step `end_step`.
struct Phase {
  double end_step;
  double start;
  double end;
};

double one_cycle_factor(const std::vector<Phase>& phases, bool cosine, int64_t steps) {
  const double n = static_cast<double>(steps);
  double start_step = 0;
  for (size_t i = 0; i < phases.size(); ++i) {
    const Phase& p = phases[i];
    if (n <= p.end_step || i + 1 == phases.size()) {
      const double span = p.end_step - start_step;
      const double pct = span > 0 ? (n - start_step) / span : 1.0;
      if (cosine) return p.end + (p.start - p.end) / 2.0 * (std::cos(kPi * pct) + 1);
      return (p.end - p.start) * pct + p.start;
    }
    start_step = p.end_step;
  }
  return 1.0;
}

struct OneCycleArgs {
  std::optional<TrainUnit> total;  ///< null: the whole run
  double pct_start = 0.3;
  double div_factor = 25;
  double final_div_factor = 1e4;
  bool cosine = true;
  bool three_phase = false;
};

void register_one_cycle() {
  Options<OneCycleArgs> args;
  args.field("total", &OneCycleArgs::total).help("length of the schedule (null = the whole run)");
  args.field("pct_start", &OneCycleArgs::pct_start)
      .min(0)
      .max(1)
      .help("fraction of the cycle spent raising the lr");
  args.field("div_factor", &OneCycleArgs::div_factor)
      .gt(0)
      .help("initial lr = base lr / div_factor");
  args.field("final_div_factor", &OneCycleArgs::final_div_factor)
      .gt(0)
      .help("final lr = initial lr / final_div_factor");
  args.field("anneal", &OneCycleArgs::cosine, {{"cos", true}, {"linear", false}})
      .help("annealing strategy");
  args.field("three_phase", &OneCycleArgs::three_phase)
      .help("come back down to the initial lr before the final annealing");
  scheduler_registry().add(
      "one_cycle",
      "the 1cycle policy with the base lr as max_lr; scales the lr only, not momentum (OneCycleLR)",
      std::move(args),
      [](const OneCycleArgs& a, const Config& at, const ScheduleContext& ctx) -> SchedulerPtr {
        const int64_t total = run_length(a.total, at.key_path("total"), ctx);
        const double pct = a.pct_start;
        const double initial = 1.0 / a.div_factor;
        const double min = initial / a.final_div_factor;
        const double last = static_cast<double>(total - 1);
        const double ramp_end = pct * static_cast<double>(total) - 1;
        std::vector<Phase> phases{{ramp_end, initial, 1.0}};
        if (a.three_phase) {
          phases.push_back({2 * pct * static_cast<double>(total) - 2, 1.0, initial});
          phases.push_back({last, initial, min});
        } else {
          phases.push_back({last, 1.0, min});
        }
        const bool cosine = a.cosine;
        return std::make_unique<LambdaSchedule>([=](int64_t n) {
          return one_cycle_factor(phases, cosine, std::min<int64_t>(n, total - 1));
        });
      });
}

}  // namespace

void register_torch_schedules() {
  register_step();
  register_multistep();
  register_exponential();
  register_cosine_annealing();
  register_one_cycle();
}

}  // namespace unitrain::schedules
