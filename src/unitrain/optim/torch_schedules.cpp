// Schedules of torch.optim.lr_scheduler (PyTorch 1.13) in closed form, as multipliers of the
// base lr: StepLR, MultiStepLR, ExponentialLR, OneCycleLR, CosineAnnealingLR.
#include <algorithm>
#include <cmath>

#include "unitrain/optim/builtin_schedules.h"

namespace unitrain::schedules {
namespace {

void register_step() {
  Schema s;
  s.add("step_size", Type::Duration)
      .help("the lr is multiplied by gamma every step_size, e.g. '30 epochs'");
  s.add("gamma", Type::Float).def(0.1).gt(0).help("multiplier applied every step_size");
  scheduler_registry().add("step", "multiply by gamma every step_size (StepLR)", std::move(s),
                           [](const Config& args, const ScheduleContext& ctx) -> SchedulerPtr {
                             const int64_t step_size = arg_steps(args, "step_size", ctx);
                             UT_CHECK(step_size > 0, args.key_path("step_size"),
                                      " must be at least one scheduler step, got '",
                                      args.get_duration("step_size").str(), "'");
                             const double gamma = args.get_double("gamma");
                             return std::make_unique<LambdaSchedule>([=](int64_t n) {
                               return std::pow(gamma, static_cast<double>(n / step_size));
                             });
                           });
}

void register_multistep() {
  Schema s;
  s.add("milestones", Type::IntList).help("scheduler steps at which the lr is multiplied by gamma");
  s.add("gamma", Type::Float).def(0.1).gt(0).help("multiplier applied at each milestone");
  scheduler_registry().add(
      "multistep", "multiply by gamma at each milestone (MultiStepLR)", std::move(s),
      [](const Config& args, const ScheduleContext& ctx) -> SchedulerPtr {
        std::vector<int64_t> milestones = args.get_int_list("milestones");
        for (int64_t m : milestones) {
          UT_CHECK(m >= 0, args.key_path("milestones"),
                   " must be scheduler step numbers >= 0, got ", m);
        }
        std::sort(milestones.begin(), milestones.end());
        const double gamma = args.get_double("gamma");
        return std::make_unique<LambdaSchedule>([=](int64_t n) {
          // Repeated milestones count twice, as in MultiStepLR (bisect_right).
          const auto passed =
              std::upper_bound(milestones.begin(), milestones.end(), n) - milestones.begin();
          return std::pow(gamma, static_cast<double>(passed));
        });
      });
}

void register_exponential() {
  Schema s;
  s.add("gamma", Type::Float).gt(0).help("multiplier applied every scheduler step");
  scheduler_registry().add("exponential", "multiply by gamma every scheduler step (ExponentialLR)",
                           std::move(s),
                           [](const Config& args, const ScheduleContext&) -> SchedulerPtr {
                             const double gamma = args.get_double("gamma");
                             return std::make_unique<LambdaSchedule>([=](int64_t n) {
                               return std::pow(gamma, static_cast<double>(n));
                             });
                           });
}

void register_cosine_annealing() {
  Schema s;
  s.add("t_max", Type::Duration)
      .nullable()
      .help("half period of the cosine (null = the whole run)");
  s.add("eta_min_ratio", Type::Float)
      .def(0.0)
      .min(0)
      .max(1)
      .help("lowest lr as a fraction of the base lr");
  scheduler_registry().add(
      "cosine_annealing",
      "cosine from the base lr to eta_min over t_max, then back up (CosineAnnealingLR)",
      std::move(s), [](const Config& args, const ScheduleContext& ctx) -> SchedulerPtr {
        const double t_max = static_cast<double>(run_length(args, "t_max", ctx));
        const double eta = args.get_double("eta_min_ratio");
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

void register_one_cycle() {
  Schema s;
  add_total_field(s);
  s.add("pct_start", Type::Float)
      .def(0.3)
      .min(0)
      .max(1)
      .help("fraction of the cycle spent raising the lr");
  s.add("div_factor", Type::Float).def(25.0).gt(0).help("initial lr = base lr / div_factor");
  s.add("final_div_factor", Type::Float)
      .def(1e4)
      .gt(0)
      .help("final lr = initial lr / final_div_factor");
  s.add("anneal", Type::String).def("cos").choices({"cos", "linear"}).help("annealing strategy");
  s.add("three_phase", Type::Bool)
      .def(false)
      .help("come back down to the initial lr before the final annealing");
  scheduler_registry().add(
      "one_cycle",
      "the 1cycle policy with the base lr as max_lr; scales the lr only, not momentum (OneCycleLR)",
      std::move(s), [](const Config& args, const ScheduleContext& ctx) -> SchedulerPtr {
        const int64_t total = run_length(args, "total", ctx);
        const double pct = args.get_double("pct_start");
        const double initial = 1.0 / args.get_double("div_factor");
        const double min = initial / args.get_double("final_div_factor");
        const double last = static_cast<double>(total - 1);
        const double ramp_end = pct * static_cast<double>(total) - 1;
        std::vector<Phase> phases{{ramp_end, initial, 1.0}};
        if (args.get_bool("three_phase")) {
          phases.push_back({2 * pct * static_cast<double>(total) - 2, 1.0, initial});
          phases.push_back({last, initial, min});
        } else {
          phases.push_back({last, 1.0, min});
        }
        const bool cosine = args.get_string("anneal") == "cos";
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
