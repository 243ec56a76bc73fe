#include "unitrain/engine/loop/window_tokens.h"

#include <torch/torch.h>

#include <algorithm>

#include "unitrain/core/error.h"
#include "unitrain/engine/setup/run_plan.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {

WindowTokens::WindowTokens(std::string key, ProcessGroup* group, const RunPlan& plan)
    : key_(std::move(key)), group_(group), plan_(plan) {}

int64_t target_tokens(const Batch& batch, const std::string& key) {
  UT_CHECK(batch.has(key), "train.loss_average: tokens counts the targets of batch key '", key,
           "' (train.token_key), which the batches do not hold");
  return batch.at(key).ne(-100).sum().item<int64_t>();
}

int64_t WindowTokens::count(const Batch& batch) const { return target_tokens(batch, key_); }

void WindowTokens::read_window(
    EpochIterator& source, int64_t b,
    const std::function<std::unique_ptr<EpochIterator>(int64_t)>& reread) {
  const int64_t first = b / plan_.accumulation * plan_.accumulation;
  const int64_t last = std::min(first + plan_.accumulation, plan_.batches_per_epoch) - 1;
  double local = 0;
  if (b > first) {  // resumed inside the window: its first micro-batches again, to count them
    auto again = reread(first);
    for (int64_t i = first; i < b; ++i) {
      if (auto batch = again->next()) local += double(count(*batch));
    }
  }
  for (int64_t i = b; i <= last; ++i) {
    std::optional<Batch> batch = source.next();
    if (!batch) break;
    local += double(count(*batch));
    ahead_.push_back(std::move(*batch));
  }
  total_ = group_ ? group_->sum_of(local) : local;
  window_end_ = last;
}

std::optional<Batch> WindowTokens::next(
    EpochIterator& source, int64_t b,
    const std::function<std::unique_ptr<EpochIterator>(int64_t)>& reread) {
  if (b >= plan_.batches_per_epoch) return source.next();  // the epoch's end: nothing to count
  if (ahead_.empty() && (b > window_end_ || window_end_ < 0)) read_window(source, b, reread);
  if (ahead_.empty()) return std::nullopt;
  Batch batch = std::move(ahead_.front());
  ahead_.pop_front();
  if (b >= window_end_) window_end_ = -1;  // the next micro-batch starts a window
  return batch;
}

double WindowTokens::weight(const Batch& batch) const {
  return total_ > 0 ? double(count(batch)) / total_ : 0.0;
}

void WindowTokens::clear() {
  ahead_.clear();
  window_end_ = -1;
}

}  // namespace unitrain
