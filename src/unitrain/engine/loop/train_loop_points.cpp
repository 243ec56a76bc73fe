// TrainLoop's observation points: its log events (the training sums logged and cleared) and
// validation passes with what they decide; what its checkpoints hold, restoring a resume
// point, and rolling back to the last checkpoint on divergence.
#include <fmt/format.h>
#include <torch/torch.h>

#include <unordered_map>
#include <unordered_set>

#include "unitrain/checkpoint/tensor_cut.h"
#include "unitrain/core/error.h"
#include "unitrain/core/memory.h"
#include "unitrain/engine/checkpoints/checkpoint_entries.h"
#include "unitrain/engine/loop/evaluator.h"
#include "unitrain/engine/loop/run_decisions.h"
#include "unitrain/engine/loop/train_loop.h"
#include "unitrain/engine/parameter_state.h"
#include "unitrain/log/console.h"
#include "unitrain/parallel/pipeline_stage.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/reduce_metrics.h"
#include "unitrain/parallel/shard_ordered_metrics.h"
#include "unitrain/parallel/tensor_parallel.h"
#include "unitrain/precision/precision.h"

namespace unitrain {

void TrainLoop::add_train_mean(const std::string& name, double value) {
  add_train_mean(name, torch::tensor(value, torch::kFloat64));
}

void TrainLoop::add_train_mean(const std::string& name, const torch::Tensor& value) {
  logs_.add_mean(name, value);
}

LogEvent TrainLoop::event(MetricMap metrics) const {
  return {counters_.step, epochs_done(), counters_.samples, 0, std::move(metrics)};
}

void TrainLoop::log_train() {
  if (!logs_.has_train_sums()) return;
  Profiler::Range range(profiler_.get(), Phase::Logging);
  MetricMap m = logs_.take_train_means();
  optimizers_->add_lrs(m);
  if (const LossScaler* scaler = precision_.scaler()) m["train/loss_scale"] = scaler->scale();
  if (counters_.skipped_steps > 0) m["train/skipped_steps"] = double(counters_.skipped_steps);
  callbacks_.call("on_before_log", &Callback::on_before_log, m);
  logs_.log_train(event(m));
  callbacks_.call("on_log", &Callback::on_log, m);
}

void TrainLoop::validate() {
  if (!data_.val() || logs_.validated_at(counters_.step)) return;
  logs_.settle();
  Profiler::Range range(profiler_.get(), Phase::Validation);
  callbacks_.call("on_validation_start", &Callback::on_validation_start);
  const int64_t max_batches = settings_.train.test_mode ? 1 : -1;
  // ZeRO 3's forward gathers from every rank: each runs as many batches as the largest shard.
  int64_t lockstep = -1;
  if (group_ && settings_.distributed.zero == 3) {
    lockstep = data_.val()->most_batches_per_epoch();
    if (max_batches >= 0) lockstep = std::min(lockstep, max_batches);
  }
  // distributed.reproducible: the batches' values added in the order of the batches, the same
  // sums on every world size.
  ShardOrderedMetrics in_order;
  const bool ordered = plan_.micro_shards > 0;
  EvalPass pass;
  pass.max_batches = max_batches;
  pass.hooks = &callbacks_;
  pass.precision = &precision_;
  pass.lockstep_batches = lockstep;
  pass.token_key = settings_.train.eval_token_key();
  pass.in_order = ordered ? &in_order : nullptr;
  pass.pipeline = step_->pipeline();
  MetricAccumulator sums = evaluate_sums(module_, *data_.val(), EvalSplit::Val, pass);
  if (ordered) {
    in_order.fold(data_group_.get(), sums);
  } else if (data_group_) {
    all_reduce_metrics(*data_group_, sums);  // each replica read a disjoint shard
  }
  MetricMap m;
  for (const auto& [name, value] : sums.result()) m["val/" + name] = value;
  logs_.log_val(event(m), counters_.step);
  optimizers_->observe_validation(m, counters_);
  checkpoints_->observe_validation(m);
  callbacks_.call("on_validation_end", &Callback::on_validation_end, m);
  // Data-parallel: a stop any rank's callbacks asked for in this pass stops every rank now.
  decisions_.agree_after_validation([this](bool mine) {
    std::vector<torch::Tensor> asked{torch::tensor(mine ? 1.0f : 0.0f)};
    group_->all_reduce_max(asked);
    return asked[0].item<float>() > 0;
  });
}

void TrainLoop::finish_logs() {
  log_train();
  if (!settings_.train.test_mode) validate();
  decisions_.training_ended();  // a signal from now on stops nothing
}

void TrainLoop::list_checkpoint_entries(torch::optim::Optimizer* trainers) {
  // What a checkpoint holds, in the order it saves and restores.
  TrainCheckpoints& c = *checkpoints_;
  c.add(logs_);               // sums, log position, time, last metrics
  c.add(step_->nonfinite());  // a non-finite loss earlier in the window
  ShardedParameters* sharded = step_->sharded_parameters();
  if (sharded) {
    const std::string root = settings_.run_dir + "/checkpoints";
    c.add(sharded_model_entry(module_, *sharded, *group_, counters_, precision_.masters(), root));
    for (ParameterState* state : parameter_states()) {  // kept by parts too
      c.add(sharded_state_entry(*state, module_, *sharded, *group_, root),
            TrainCheckpoints::Restores::AfterFitStart);  // on_fit_start sets the state up
    }
  } else {
    if (tensor_group_ || stage_) {  // a model cut over processes: files of whole tensors
      // A callback's per-parameter state (ema) would be saved as the first process's parts.
      UT_CHECK(parameter_states().empty(),
               "a callback that keeps a state per parameter (callbacks: ema) with "
               "distributed.tensor_parallel or pipeline_parallel is not built yet (its "
               "checkpoint would hold one process's parts); leave one of them out");
      cut_ = std::make_unique<TensorCut>();
      cut_->group = tensor_group_;
      if (tensor_group_) {
        for (auto& [name, split] : tp::splits_of(module_.weights())) cut_->splits[name] = split;
      }
      cut_->gathers = plan_.rank == 0;  // the first replica's group: its first process writes
      if (stage_) cut_stages();
    }
    c.add(model_entry(module_, precision_, cut_.get()));
  }
  if (trainers) {
    // (ZeRO's partitions are the replicas': of the data-parallel group.)
    c.add(optimizer_entry(*trainers, module_.weights(), data_group_.get(), step_->sharding(),
                          settings_.run_dir + "/checkpoints", sharded, cut_.get(),
                          cut_ ? precision_.masters() : nullptr));
  }
  c.add(gradients_entry(module_, counters_));
  optimizers_->add_entries(c, counters_);
  c.add(callbacks_entry(callbacks_), TrainCheckpoints::Restores::AfterFitStart);
  c.add(loss_scaler_entry(precision_));
  if (step_->divergence().watches_spikes() || settings_.train.rolls_back()) {
    c.add(divergence_entry(step_->divergence()));
  }
  c.add(rng_entry(group_.get()));
}

void TrainLoop::cut_stages() {
  cut_->stage = stage_;
  cut_->pipe_gathers = plan_.rank == 0 && (!tensor_group_ || tensor_group_->rank() == 0);
  std::unordered_map<const void*, int> stage_of;
  const auto units = module_.units();
  for (size_t u = 0; u < units.size(); ++u) {
    for (const auto& p : units[u]) stage_of[p.unsafeGetTensorImpl()] = stage_->stage_of(u);
  }
  std::unordered_set<const void*> held;  // another stage's, held here too (a tied head)
  for (const auto& s : stage_->shared()) held.insert(s.param.unsafeGetTensorImpl());
  for (const auto& p : module_.weights().named_parameters()) {
    const void* impl = p.value().unsafeGetTensorImpl();
    const auto it = stage_of.find(impl);
    if (it == stage_of.end()) continue;
    cut_->stage_of[p.key()] = it->second;
    if (it->second != stage_->stage() && !held.count(impl)) cut_->elsewhere[p.key()] = p.value();
  }
}

std::vector<ParameterState*> TrainLoop::parameter_states() const {
  std::vector<ParameterState*> out;
  for (const auto& callback : callbacks_.all()) {
    if (ParameterState* state = callback->parameter_state()) out.push_back(state);
  }
  return out;
}

void TrainLoop::restore(const ResumePoint& resume) {
  counters_ = resume.file.state;                          // first: the entries restore against them
  if (resume.file.stopped) decisions_.stop_everywhere();  // a finished run: nothing to train
  checkpoints_->restore(resume, plan_.batches_per_epoch, plan_.process, "resumed from",
                        TrainCheckpoints::Which::WithTheRun);
  periods_.start_at(counters_);
  // (the rollbacks before the checkpoint scaled the lr)
  optimizers_->restored(step_->divergence().lr_scale(), counters_, /*moved=*/false);
  const std::string note =
      optimizers_->resume_note(resume.config_changes, resume.file.last_train, counters_.step + 1);
  if (!note.empty()) log::warn(note);  // training goes on with another lr than it would have
  if (step_->sharded_parameters()) release_freed_memory();  // ZeRO 3: what reading the files freed
}

void TrainLoop::restore_callbacks(const ResumePoint& resume) {
  checkpoints_->restore_late(resume, plan_.process);
}

bool TrainLoop::roll_back(const MicroStep& m) {
  if (m.rollback.empty()) return false;
  Profiler::Range range(profiler_.get(), Phase::Checkpoint);
  const std::string dir = checkpoints_->rollback_point();  // rank 0: written
  UT_CHECK_TRAIN(!dir.empty(), m.rollback,
                 "; the run rolls back to its last checkpoint, but none was saved yet (the first "
                 "save comes with checkpoint.every)");
  DivergenceGuard& divergence = step_->divergence();
  divergence.begin_rollback(m.rollback);  // TrainError past max_rollbacks
  if (group_) group_->barrier();          // every rank reads what rank 0 wrote
  const ResumePoint point = read_resume_point(dir, config_);
  // The data goes on after this window; the rest comes from the checkpoint.
  const TrainState here = counters_;
  const TrainState& there = point.file.state;
  const int64_t skipped = (here.epoch - there.epoch) * plan_.batches_per_epoch +
                          here.batch_in_epoch + 1 - there.batch_in_epoch;
  // Why first, then what the restore says of the checkpoint.
  log::warn(fmt::format(
      "{}: rolled back to step {}; training goes on from epoch {} batch {} ({} batches of each "
      "process skipped){} — rollback {} of at most {} (train.divergence.max_rollbacks)",
      m.rollback, there.step, here.epoch, here.batch_in_epoch + 1, skipped,
      divergence.lr_scale() != 1.0 ? fmt::format(", learning rates x {:.6g}", divergence.lr_scale())
                                   : "",
      divergence.rollbacks(), settings_.train.divergence.max_rollbacks));
  const double seconds = logs_.elapsed();
  const std::string resumed_from = logs_.resumed_from();
  close_epoch_batches();
  step_->runner().drop_window();
  optimizers_->clear_states();   // the checkpoint's replace them whole
  counters_ = point.file.state;  // first: the entries restore against them
  checkpoints_->restore(point, plan_.batches_per_epoch, plan_.process, "rolled back to");
  periods_.start_at(counters_);
  divergence.rolled_back();
  // The logs go back to the checkpoint as a resume's do (the abandoned steps leave them); the
  // rollback itself stays, as an event at the checkpoint's step.
  logs_.rolled_back({counters_.step,
                     counters_.epoch,
                     counters_.samples,
                     seconds,
                     {{"train/rollbacks", double(divergence.rollbacks())}}},
                    seconds, resumed_from);
  if (counters_.micro_in_window != 0) step_->runner().drop_window();  // saved inside a window
  counters_.epoch = here.epoch;
  counters_.batch_in_epoch = here.batch_in_epoch + 1;
  counters_.micro_in_window = 0;
  optimizers_->restored(divergence.lr_scale(), counters_, /*moved=*/true);
  return true;
}

}  // namespace unitrain
