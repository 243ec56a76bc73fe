#include "unitrain/engine/step/divergence_guard.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/core/error.h"

namespace unitrain {

void DivergenceOptions::declare(Options<DivergenceOptions>& o) {
  using T = DivergenceOptions;
  o.field("spike_factor", &T::spike_factor)
      .gt(1)
      .harmless()
      .help(
          "a step whose loss (over every rank's samples) is above this many times the mean of the "
          "last `window` steps' losses is a spike (null = no spike detection; reads the loss on "
          "the host every step)");
  o.field("window", &T::window).min(1).harmless().help("steps in the moving mean of the loss");
  o.field("action", &T::action,
          {{"rollback", SpikeAction::Rollback},
           {"skip", SpikeAction::Skip},
           {"stop", SpikeAction::Stop}})
      .harmless()
      .help(
          "what a spike does: rollback = restore the last checkpoint and go on after the batches "
          "that led to the spike; skip = skip that update; stop = end the run with exit 1");
  o.field("lr_factor", &T::lr_factor)
      .gt(0)
      .max(1)
      .harmless()
      .help("each rollback multiplies every learning rate by this, for the rest of the run");
  o.field("max_rollbacks", &T::max_rollbacks)
      .min(0)
      .harmless()
      .help(
          "rollbacks (spikes and train.on_nonfinite: rollback together) before the run ends with "
          "exit 1");
}

std::string DivergenceGuard::spike(double loss) const {
  if (!watches_spikes() || !std::isfinite(loss)) return "";
  if (static_cast<int64_t>(losses_.size()) < options_.window) return "";
  const double mean = sum_ / double(losses_.size());
  if (!(loss > *options_.spike_factor * mean)) return "";
  return fmt::format("loss {:.6g} is above {} x {:.6g}, the mean of the last {} steps", loss,
                     *options_.spike_factor, mean, losses_.size());
}

void DivergenceGuard::record(double loss) {
  if (!watches_spikes() || !std::isfinite(loss)) return;
  losses_.push_back(loss);
  sum_ += loss;
  if (static_cast<int64_t>(losses_.size()) > options_.window) {
    sum_ -= losses_.front();
    losses_.pop_front();
  }
}

void DivergenceGuard::begin_rollback(const std::string& why) {
  UT_CHECK_TRAIN(rollbacks_ < options_.max_rollbacks, why, "; the run has rolled back ", rollbacks_,
                 " time(s), train.divergence.max_rollbacks is ", options_.max_rollbacks,
                 ": it keeps diverging. Lower optimizer.lr, set train.clip_grad_norm or "
                 "train.divergence.lr_factor, or check the data");
  ++rollbacks_;
  lr_scale_ *= options_.lr_factor;
  rolling_back_ = true;
}

std::string DivergenceGuard::to_json() const {
  nlohmann::json j;
  j["losses"] = std::vector<double>(losses_.begin(), losses_.end());
  j["rollbacks"] = rollbacks_;
  j["lr_scale"] = lr_scale_;
  return j.dump(1) + "\n";
}

void DivergenceGuard::load_json(const std::string& text, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
    losses_.clear();
    sum_ = 0;
    for (double v : j.at("losses").get<std::vector<double>>()) record(v);
    if (!rolling_back_) {
      rollbacks_ = j.at("rollbacks").get<int64_t>();
      lr_scale_ = j.at("lr_scale").get<double>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw TrainError(fmt::format("{} is not a divergence state file: {}", where, e.what()));
  }
}

namespace {

class DivergenceEntry : public CheckpointEntry {
 public:
  explicit DivergenceEntry(DivergenceGuard& guard) : guard_(guard) {}

  void save(CheckpointWrite& out) override {
    if (out.writes) out.add(checkpoint_files::kDivergence, guard_.to_json());
  }

  // A checkpoint saved before train.divergence was set (or by an older unitrain) has no file:
  // the moving mean starts empty.
  void restore(const CheckpointRead& in) override {
    if (!in.has(checkpoint_files::kDivergence)) return;
    const std::vector<char> b = in.read(checkpoint_files::kDivergence);
    guard_.load_json(std::string(b.begin(), b.end()), in.path(checkpoint_files::kDivergence));
  }

 private:
  DivergenceGuard& guard_;
};

}  // namespace

CheckpointEntryPtr divergence_entry(DivergenceGuard& guard) {
  return std::make_unique<DivergenceEntry>(guard);
}

}  // namespace unitrain
