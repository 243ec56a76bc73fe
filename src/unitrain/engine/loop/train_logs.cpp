#include "unitrain/engine/loop/train_logs.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/state_json.h"
#include "unitrain/checkpoint/trainer_state_file.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/step/nonfinite_watch.h"
#include "unitrain/parallel/reduce_metrics.h"

namespace unitrain {
namespace {
constexpr const char* kLogsSection = "logs";
}  // namespace

TrainLogs::TrainLogs(ProcessGroup* group, int rank) : group_(group), rank_(rank) {}

void TrainLogs::settle() const {
  if (watch_) watch_->settle();
}

int64_t TrainLogs::events() const { return logger_ ? logger_->events() : restored_log_events_; }

void TrainLogs::order_by_shards() { ordered_ = std::make_unique<ShardOrderedMetrics>(); }

void TrainLogs::add_batch(const MetricValue& loss, int64_t counted,
                          const std::map<std::string, MetricValue>& metrics, int64_t samples) {
  if (ordered_) {  // the loss by what it averages over, the metrics by samples
    std::map<std::string, MetricValue> values = metrics;
    values["loss"] =
        MetricValue(loss.value, loss.weight < 0 ? double(counted) : loss.weight, loss.exp_of_mean);
    return ordered_->add(values, samples);
  }
  train_sums_.add("loss", loss, counted);  // read at log time when deferred
  train_sums_.add(metrics, samples);
}

void TrainLogs::add_mean(const std::string& name, const torch::Tensor& value) {
  (ordered_ ? means_ : train_sums_)
      .add(name, MetricValue(value.detach().to(torch::kFloat64).reshape({}), 1.0), 1);
}

void TrainLogs::fold() {
  if (ordered_) ordered_->fold(group_, train_sums_);
}

MetricMap TrainLogs::take_train_means() {
  settle();
  MetricMap m;
  if (!has_train_sums()) return m;
  if (ordered_) {
    fold();  // every rank's micro-shards in order: the same sums everywhere
    if (group_) all_reduce_metrics(*group_, means_);
    for (const auto& [k, v] : means_.result()) m["train/" + k] = v;
    means_.clear();
  } else if (group_) {
    all_reduce_metrics(*group_, train_sums_);  // every rank's samples
  }
  for (const auto& [k, v] : train_sums_.result()) m["train/" + k] = v;
  train_sums_.clear();
  return m;
}

void TrainLogs::log_train(LogEvent event) {
  settle();
  event.time = elapsed();
  logger_->log(event);
  last_train_ = std::move(event.metrics);
}

void TrainLogs::log_val(LogEvent event, int64_t step) {
  settle();
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
  fold();  // (ordered: the same sums on every rank, not summed again)
  MetricAccumulator sums = train_sums_;
  if (group_ && !ordered_) all_reduce_metrics(*group_, sums);
  StateJson j;
  j["log_events"] = events();
  j["last_val_step"] = last_val_step_;
  j["elapsed"] = elapsed();
  const auto write = [](const MetricAccumulator& from, StateJson& to) {
    to = StateJson::object();
    for (const auto& [name, s] : from.sums()) {
      to[name] = {state_number(s.weighted), state_number(s.weight), s.exp_of_mean};
    }
  };
  write(sums, j["train_sums"]);
  if (ordered_) {  // (every rank reduces, whether it has means or not)
    MetricAccumulator means = means_;
    if (group_) all_reduce_metrics(*group_, means);
    if (!means.empty()) write(means, j["train_means"]);
  }
  out.state.set_section(kLogsSection, j.dump());
  out.state.last_train = last_train_;
  out.state.last_val = last_val_;
}

void TrainLogs::restore(const CheckpointRead& in) {
  const std::string where = in.path(checkpoint_files::kTrainerState);
  const StateJson j = state_section(in.state.section(kLogsSection));
  try {
    restored_log_events_ = std::max<int64_t>(j.value("log_events", int64_t(0)), 0);
    last_val_step_ = j.value("last_val_step", int64_t(-1));
    time_offset_ = j.value("elapsed", 0.0);
    train_sums_.clear();
    means_.clear();
    if (ordered_) ordered_->clear();
    const auto read = [&](const char* key, MetricAccumulator& into) {
      if (!j.contains(key)) return;
      for (const auto& [name, v] : j[key].items()) {
        UT_CHECK_TRAIN(v.is_array() && v.size() == 3 && v.at(2).is_boolean(), where,
                       ": sections.logs.", key, ".", name,
                       " must be [weighted, weight, exp_of_mean]");
        auto& sum = into.sums()[name];
        sum.weighted = state_double(v.at(0));
        sum.weight = state_double(v.at(1));
        sum.exp_of_mean = v.at(2).get<bool>();
      }
    };
    // Saved summed over ranks: the others start from nothing, as they are summed again; the
    // ordered sums every rank holds.
    if (rank_ == 0 || ordered_) read("train_sums", train_sums_);
    if (rank_ == 0) read("train_means", ordered_ ? means_ : train_sums_);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type
    throw TrainError(fmt::format("{}: sections.logs: {}", where, e.what()));
  }
  last_train_ = in.state.last_train;
  last_val_ = in.state.last_val;
  resumed_from_ = in.dir;
}

}  // namespace unitrain
