#pragma once
// OptimizerSetup: the optimizers a module steps itself (TrainModule::configure_optimizers).
#include <algorithm>
#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/optim/optimizer.h"
#include "unitrain/optim/scheduler.h"

namespace unitrain {

/// What TrainModule::configure_optimizers gets: the run's length, for schedules, and the list
/// its optimizers go into.
class OptimizerSetup {
 public:
  /// One optimizer and its lr schedule (null: the lr stays as the optimizer was built).
  struct Entry {
    std::string name;
    OptimizerPtr optimizer;
    SchedulerPtr schedule;
  };

  explicit OptimizerSetup(ScheduleContext context) : context_(context) {}
  /// The run's steps, steps per epoch and samples per step: what a schedule is built from
  /// (e.g. scheduler_registry().create(section, setup.context())).
  const ScheduleContext& context() const { return context_; }
  /// An optimizer the module steps itself as `name` (letters, digits, `_` and `-`: it names
  /// the checkpoint's optimizer-<name>.pt and the log's train/lr-<name>), with its schedule.
  void add(const std::string& name, OptimizerPtr optimizer, SchedulerPtr schedule = nullptr) {
    UT_CHECK(!name.empty() && std::all_of(name.begin(), name.end(),
                                          [](unsigned char c) {
                                            return std::isalnum(c) || c == '_' || c == '-';
                                          }),
             "configure_optimizers: optimizer name '", name,
             "' must be letters, digits, '_' or '-' (it names a checkpoint file)");
    UT_CHECK(optimizer != nullptr, "configure_optimizers: optimizer '", name, "' is null");
    for (const Entry& e : entries_) {
      UT_CHECK(e.name != name, "configure_optimizers: two optimizers are named '", name, "'");
    }
    entries_.push_back({name, std::move(optimizer), std::move(schedule)});
  }
  const std::vector<Entry>& entries() const { return entries_; }
  std::vector<Entry>& entries() { return entries_; }

 private:
  ScheduleContext context_;
  std::vector<Entry> entries_;
};

}  // namespace unitrain
