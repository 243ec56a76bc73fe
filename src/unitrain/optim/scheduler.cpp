#include "unitrain/optim/scheduler.h"

#include <algorithm>
#include <mutex>

#include "unitrain/optim/builtin_schedules.h"
#include "unitrain/optim/component_section.h"

namespace unitrain {

int64_t ScheduleContext::to_sched_steps(const TrainUnit& d) const {
  const int64_t per_epoch_steps = std::max<int64_t>(1, steps_per_epoch);
  const int64_t per_step_samples = std::max<int64_t>(1, samples_per_step);
  const int64_t count = std::max<int64_t>(0, d.count);
  switch (d.unit) {
    case TrainUnit::Unit::Epochs:  // a fraction (count / per epochs): whole steps or epochs
      return per_epoch ? count / d.per : count * per_epoch_steps / d.per;
    case TrainUnit::Unit::Steps:
      return per_epoch ? count / per_epoch_steps : count;
    case TrainUnit::Unit::Samples:
      return per_epoch ? count / (per_step_samples * per_epoch_steps) : count / per_step_samples;
  }
  return 0;
}

Registry<SchedulerPtr, const ScheduleContext&>& scheduler_registry() {
  static Registry<SchedulerPtr, const ScheduleContext&> registry("scheduler");
  return registry;
}

namespace {

/// The keys of the `scheduler` section besides `type` and `args`.
struct SchedulerSection {
  bool per_epoch = false;

  static void declare(Options<SchedulerSection>& o) {
    o.field("interval", &SchedulerSection::per_epoch, {{"step", false}, {"epoch", true}})
        .fixed("the schedule's state is saved")
        .help("the schedule advances once per optimizer step or once per epoch");
  }
};

}  // namespace

std::shared_ptr<const Schema> scheduler_section_schema() {
  return options_of<SchedulerSection>().schema();
}

bool schedules_per_epoch(const Config& scheduler_section) {
  return options_of<SchedulerSection>().read_resolved(scheduler_section).per_epoch;
}

SchedulerPtr build_scheduler(const Config& scheduler_section, ScheduleContext context) {
  const Config section = resolve_component_section(scheduler_section, "scheduler", "constant",
                                                   scheduler_section_schema());
  context.per_epoch = schedules_per_epoch(section);
  return scheduler_registry().create(section, context);
}

void register_builtin_schedulers() {
  static std::once_flag once;
  std::call_once(once, [] {
    schedules::register_warmup_schedules();
    schedules::register_torch_schedules();
    schedules::register_reduce_on_plateau();
  });
}

namespace schedules {

int64_t run_length(const std::optional<TrainUnit>& length, const std::string& key,
                   const ScheduleContext& context) {
  if (length) {
    const int64_t steps = context.to_sched_steps(*length);
    UT_CHECK(steps > 0, key, " must be at least one scheduler step, got '", length->str(), "' (",
             steps, context.per_epoch ? " epochs)" : " steps)");
    return steps;
  }
  UT_CHECK(context.total_steps > 0, key,
           " is needed: the length of the run is unknown here; set it, e.g. '10000 steps'");
  return context.total_steps;
}

}  // namespace schedules
}  // namespace unitrain
