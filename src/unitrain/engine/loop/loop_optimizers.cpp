#include "unitrain/engine/loop/loop_optimizers.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/callback.h"
#include "unitrain/engine/checkpoints/checkpoint_entries.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/config/train_options.h"
#include "unitrain/engine/loop/train_checkpoints.h"
#include "unitrain/log/console.h"
#include "unitrain/optim/optimizer_setup.h"
#include "unitrain/precision/precision_support.h"

namespace unitrain {
namespace files = checkpoint_files;
namespace {

/// A module's own optimizer (manual optimization): its state in module-optimizer-<name>.pt,
/// its schedule's in module-schedule-<name>.json; the lr follows the restored run.
class ModuleOptimizerEntry : public CheckpointEntry {
 public:
  ModuleOptimizerEntry(std::string name, torch::optim::Optimizer& optimizer, LrController& lr,
                       const TrainState& counters)
      : name_(std::move(name)), optimizer_(optimizer), lr_(lr), counters_(counters) {}

  void save(CheckpointWrite& out) override {
    if (!out.writes) return;
    out.files.push_back({files::module_optimizer(name_),
                         {},
                         optimizer_state_snapshot(optimizer_, out.async, out.buffers)});
    if (Scheduler* s = lr_.scheduler()) {
      out.add(files::module_schedule(name_), nlohmann::json(s->state()).dump());
    }
  }

  void restore(const CheckpointRead& in) override {
    const std::string file = files::module_optimizer(name_);
    UT_CHECK_TRAIN(in.has(file), in.dir, " holds no state of the module's optimizer '", name_,
                   "' (", file, "): was it trained with another configure_optimizers()?");
    load_optimizer_state(optimizer_, {{in.read(file), in.path(file)}});
    const std::string schedule = files::module_schedule(name_);
    if (Scheduler* s = lr_.scheduler(); s && in.has(schedule)) {
      const std::vector<char> bytes = in.read(schedule);
      s->load_state(
          nlohmann::json::parse(bytes.begin(), bytes.end()).get<std::map<std::string, double>>());
    }
    lr_.follow(counters_);
  }

 private:
  std::string name_;
  torch::optim::Optimizer& optimizer_;
  LrController& lr_;
  const TrainState& counters_;
};

}  // namespace

void check_manual_optimization(const TrainOptions& train, int64_t accumulation, int64_t zero) {
  const std::string who = "the module steps its own optimizers (configure_optimizers)";
  UT_CHECK(accumulation == 1, "train.accumulation_steps is ", accumulation, ", but ", who,
           ": accumulate in training_step (several run().backward() before a step), and set "
           "train.accumulation_steps: 1 (and no train.global_batch_size)");
  UT_CHECK(train.clip_grad_norm == 0, "train.clip_grad_norm is ", train.clip_grad_norm, ", but ",
           who,
           ": clip in training_step before stepping (torch::nn::utils::clip_grad_norm_), "
           "and set train.clip_grad_norm: 0");
  UT_CHECK(train.on_nonfinite != OnNonFinite::Skip, "train.on_nonfinite is skip, but ", who,
           " (its updates are done when the loss is seen): use train.on_nonfinite: stop or "
           "rollback");
  UT_CHECK(!(train.divergence.spike_factor && train.divergence.action == SpikeAction::Skip),
           "train.divergence.action is skip, but ", who,
           " (its updates are done when the loss is seen): use train.divergence.action: rollback "
           "or stop");
  check_precision_support(train.precision, manual_optimization_precisions());
  UT_CHECK(zero == 0, "distributed.zero is ", zero, ", but ", who,
           ": ZeRO shards the Trainer's optimizer; set distributed.zero: 0");
}

void warn_unused_trainer_sections(const Config& config, size_t added, int rank) {
  const Config defaults = resolve_run_config(Config());
  std::vector<std::string> unused;
  for (const char* key : {"optimizer", "scheduler"}) {
    if (config.has(key) && config.at(key).dump() != defaults.at(key).dump()) unused.push_back(key);
  }
  if (unused.empty() || rank != 0) return;
  log::warn(fmt::format(
      "{}: not used: the module steps its own optimizers (configure_optimizers added {}), with "
      "the learning rates and schedules it gives them there; remove {} from the config",
      fmt::join(unused, ", "), added, unused.size() == 1 ? "it" : "them"));
}

LoopOptimizers::LoopOptimizers(OptimizerPtr optimizer, SchedulerPtr schedule, bool per_epoch)
    : trainers_(std::move(optimizer)) {
  UT_CHECK(trainers_ != nullptr, "configure_optimizer() returned no optimizer");
  list_.push_back({"", trainers_.get(),
                   std::make_unique<LrController>(*trainers_, std::move(schedule), per_epoch)});
}

LoopOptimizers::LoopOptimizers(std::unique_ptr<OptimizerSetup> setup, bool per_epoch)
    : setup_(std::move(setup)) {
  for (OptimizerSetup::Entry& e : setup_->entries()) {
    list_.push_back(
        {e.name, e.optimizer.get(),
         std::make_unique<LrController>(*e.optimizer, std::move(e.schedule), per_epoch)});
  }
}

LoopOptimizers::~LoopOptimizers() = default;

std::vector<std::pair<std::string, torch::optim::Optimizer*>> LoopOptimizers::all() const {
  std::vector<std::pair<std::string, torch::optim::Optimizer*>> out;
  for (const Scheduled& s : list_) out.emplace_back(s.name, s.optimizer);
  return out;
}

torch::optim::Optimizer& LoopOptimizers::named(const std::string& name) const {
  UT_CHECK(manual(), "run().optimizer('", name,
           "'): this module does not step its own optimizers (its configure_optimizers() added "
           "none): the Trainer steps its optimizer after training_step returns the loss");
  for (const Scheduled& s : list_) {
    if (s.name == name) return *s.optimizer;
  }
  std::string known;
  for (const Scheduled& s : list_) known += (known.empty() ? "" : ", ") + s.name;
  throw ConfigError(
      fmt::format("run().optimizer('{}'): configure_optimizers() added no "
                  "optimizer of that name; it added: {}",
                  name, known));
}

void LoopOptimizers::scale_lrs(double scale) {
  for (Scheduled& s : list_) s.lr->set_scale(scale);
}

void LoopOptimizers::clear_states() {
  for (Scheduled& s : list_) s.optimizer->state().clear();
}

void LoopOptimizers::free_states() {
  if (trainers_) freed_state_bytes_ = optimizer_state_bytes(*trainers_);
  clear_states();
}

void LoopOptimizers::follow(const TrainState& state) {
  for (Scheduled& s : list_) s.lr->follow(state);
}

void LoopOptimizers::step_ended(const TrainState& state) {
  for (Scheduled& s : list_) {
    s.step_lr = s.lr->lr();  // train/lr: what this step used (as lr_monitor's lr-group<i>)
    if (!s.lr->per_epoch()) s.lr->follow(state);
  }
}

void LoopOptimizers::epoch_ended(const TrainState& state) {
  for (Scheduled& s : list_) {
    if (s.lr->per_epoch()) s.lr->follow(state);
  }
}

void LoopOptimizers::observe_validation(const MetricMap& val, const TrainState& state) {
  for (Scheduled& s : list_) {
    if (Scheduler* schedule = s.lr->scheduler(); schedule && schedule->needs_metric()) {
      const std::string key = s.name.empty() ? "scheduler" : "the schedule of " + s.name;
      schedule->observe(monitored(val, schedule->monitored_metric(), key));
      s.lr->follow(state);
    }
  }
}

void LoopOptimizers::add_lrs(MetricMap& metrics) const {
  for (const Scheduled& s : list_) {
    metrics[s.name.empty() ? "train/lr" : "train/lr-" + s.name] = s.step_lr;
  }
}

void LoopOptimizers::restored(double scale, const TrainState& state, bool moved) {
  if (moved || scale != 1.0) {
    scale_lrs(scale);
    follow(state);
  }
  remember_lrs();
}

void LoopOptimizers::remember_lrs() {
  for (Scheduled& s : list_) s.step_lr = s.lr->lr();
}

std::string LoopOptimizers::resume_note(const std::vector<ConfigChange>& changes,
                                        const std::map<std::string, double>& last_train,
                                        int64_t next_step) const {
  if (!manual()) return list_[0].lr->resume_note(changes, last_train, next_step);
  // The module's own schedules are functions of the run's length (its schedule context).
  const bool longer = std::any_of(changes.begin(), changes.end(), [](const ConfigChange& c) {
    return c.key == "train.max_length";
  });
  std::vector<std::string> lrs;
  for (const Scheduled& s : list_) {
    if (!longer || s.lr->scheduler() == nullptr) continue;
    const auto was = last_train.find("train/lr-" + s.name);
    lrs.push_back(
        fmt::format("{} {:.4g}{}", s.name, s.lr->lr(),
                    was == last_train.end()
                        ? ""
                        : fmt::format(" (the checkpoint last logged {:.4g})", was->second)));
  }
  if (lrs.empty()) return "";
  return fmt::format(
      "lr schedule: train.max_length changed since the checkpoint, and the module's own schedules "
      "(configure_optimizers) are functions of the run's length, so they are recomputed: step {} "
      "trains with lr {}. To continue decayed schedules unchanged, keep train.max_length (or "
      "start a new run from these weights)",
      next_step, fmt::join(lrs, ", "));
}

void LoopOptimizers::add_entries(TrainCheckpoints& checkpoints, const TrainState& counters) {
  if (!manual()) return checkpoints.add(schedule_entry(*list_[0].lr, counters));
  for (Scheduled& s : list_) {
    checkpoints.add(std::make_unique<ModuleOptimizerEntry>(s.name, *s.optimizer, *s.lr, counters));
  }
}

}  // namespace unitrain
