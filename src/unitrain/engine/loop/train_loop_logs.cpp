// TrainLoop's log events: the training sums (the loss, metrics, values logged by the module
// and callbacks) logged and cleared, and validation passes with what they decide.
#include <torch/torch.h>

#include "unitrain/engine/loop/evaluator.h"
#include "unitrain/engine/loop/run_decisions.h"
#include "unitrain/engine/loop/train_loop.h"
#include "unitrain/parallel/reduce_metrics.h"
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
  logs_.settle();  // (checked late: nothing logged if diverged)
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
  MetricAccumulator sums = evaluate_sums(module_, *data_.val(), EvalSplit::Val, max_batches,
                                         &callbacks_, &precision_, lockstep,
                                         settings_.train.eval_token_key());
  if (group_) all_reduce_metrics(*group_, sums);  // each rank read a disjoint shard
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
}

}  // namespace unitrain
