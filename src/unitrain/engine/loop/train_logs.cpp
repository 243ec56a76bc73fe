#include "unitrain/engine/loop/train_logs.h"

#include <torch/torch.h>

#include "unitrain/checkpoint/trainer_state_file.h"
#include "unitrain/parallel/reduce_metrics.h"

namespace unitrain {

TrainLogs::TrainLogs(ProcessGroup* group, int rank, std::function<void()> settle)
    : group_(group), rank_(rank), settle_(std::move(settle)) {}

void TrainLogs::add_batch(const MetricValue& loss, int64_t counted,
                          const std::map<std::string, MetricValue>& metrics,
                          int64_t samples) {
  train_sums_.add("loss", loss, counted);  // read at log time when deferred
  train_sums_.add(metrics, samples);
}

void TrainLogs::add_mean(const std::string& name, const torch::Tensor& value) {
  train_sums_.add(name, MetricValue(value.detach().to(torch::kFloat64).reshape({}), 1.0), 1);
}

MetricMap TrainLogs::take_train_means() {
  settle_();
  MetricMap m;
  if (train_sums_.empty()) return m;
  if (group_) all_reduce_metrics(*group_, train_sums_);  // every rank's samples
  for (const auto& [k, v] : train_sums_.result()) m["train/" + k] = v;
  train_sums_.clear();
  return m;
}

void TrainLogs::log_train(LogEvent event) {
  settle_();
  event.time = elapsed();
  logger_->log(event);
  last_train_ = std::move(event.metrics);
}

void TrainLogs::log_val(LogEvent event, int64_t step) {
  settle_();
  event.time = elapsed();
  logger_->log(event);
  last_val_ = std::move(event.metrics);
  last_val_step_ = step;
}

double TrainLogs::elapsed() const {
  return time_offset_ + std::chrono::duration<double>(Clock::now() - start_time_).count();
}

void TrainLogs::rolled_back(const LogEvent& event, double seconds,
                            const std::string& resumed_from) {
  logger_->rewind(restored_log_events_, event.step + 1);
  logger_->log(event);
  resumed_from_ = resumed_from;
  time_offset_ = seconds - std::chrono::duration<double>(Clock::now() - start_time_).count();
}

void TrainLogs::save(CheckpointWrite& out) {
  // The running training sums, summed over ranks (a resumed rank 0 carries them for everyone).
  MetricAccumulator sums = train_sums_;
  if (group_) all_reduce_metrics(*group_, sums);
  TrainerStateFile& st = out.state;
  for (const auto& [name, s] : sums.sums()) {
    st.train_sums[name] = {s.weighted, s.weight, s.exp_of_mean};
  }
  st.log_events = logger_->events();
  st.last_val_step = last_val_step_;
  st.elapsed = elapsed();
  st.last_train = last_train_;
  st.last_val = last_val_;
}

void TrainLogs::restore(const CheckpointRead& in) {
  const TrainerStateFile& st = in.state;
  restored_log_events_ = st.log_events;
  last_val_step_ = st.last_val_step;
  time_offset_ = st.elapsed;
  train_sums_.clear();
  if (rank_ == 0) {  // saved summed over ranks: the others start from nothing
    for (const auto& [name, s] : st.train_sums) {
      auto& sum = train_sums_.sums()[name];
      sum.weighted = s.weighted;
      sum.weight = s.weight;
      sum.exp_of_mean = s.exp_of_mean;
    }
  }
  last_train_ = st.last_train;
  last_val_ = st.last_val;
  resumed_from_ = in.dir;
}

}  // namespace unitrain
