#include "unitrain/engine/loop/loop_data.h"

#include "unitrain/engine/config/run_settings.h"
#include "unitrain/engine/loop/window_tokens.h"
#include "unitrain/engine/setup/run_plan.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {

LoopData::LoopData(DatasetPtr train, DatasetPtr val, const RunSettings& settings, bool cuda,
                   ShuffleAlgorithm order, ProcessGroup* group)
    // Batches pinned for a GPU (data.loader.pin_memory); a resumed run keeps the shuffle it
    // trained with (its checkpoint's data_order).
    : class_names_(train->class_names()),
      train_(std::move(train), settings.loader.for_device(cuda), settings.seed, "data.train",
             order) {
  if (val) {
    val_ = std::make_unique<Loader>(std::move(val), train_.options().in_order(), 0, "data.val");
  }
  const int rank = group ? group->rank() : 0;
  const int world = group ? group->world_size() : 1;
  if (settings.distributed.reproducible_on()) {
    // Whole batches a rank, whatever the world size: batch k of the epoch is micro-shard k of
    // the order, read by rank k mod W; training reads whole steps of G micro-shards.
    reproducible_ = true;
    train_.shard_batches(rank, world, settings.distributed.reproducible);
    if (val_) val_->shard_batches(rank, world, 0);
  } else if (group) {
    // Each rank reads its shard: training padded to equal lengths (every rank takes the same
    // steps), validation disjoint (every example counted once).
    train_.shard(rank, world, /*pad=*/true);
    if (val_) val_->shard(rank, world, /*pad=*/false);
  }
}

LoopData::~LoopData() = default;

void LoopData::plan(const RunSettings& settings, const RunPlan& plan, ProcessGroup* group) {
  if (settings.train.loss_average == LossAverage::Tokens) {
    tokens_ = std::make_unique<WindowTokens>(settings.train.token_key, group, plan);
  }
}

void LoopData::open_epoch(int64_t epoch, int64_t b) { epoch_ = train_.epoch(epoch, b); }

std::optional<Batch> LoopData::next(int64_t epoch, int64_t b) {
  if (!tokens_) return epoch_->next();
  return tokens_->next(*epoch_, b,
                       [this, epoch](int64_t from) { return train_.epoch(epoch, from); });
}

void LoopData::close_epoch() {
  if (!epoch_) return;
  wait_seconds_ += epoch_->wait_seconds();
  epoch_.reset();
  if (tokens_) tokens_->clear();
}

double LoopData::weight(const Batch& batch, int64_t window_samples, int64_t world) const {
  if (tokens_) return tokens_->weight(batch);
  // distributed.reproducible: one division by the step's samples, the same double on every W.
  if (reproducible_) return double(batch.size()) / double(window_samples * world);
  return double(batch.size()) / double(window_samples) / double(world);
}

int64_t LoopData::counted(const Batch& batch) const {
  return tokens_ ? tokens_->count(batch) : batch.size();
}

}  // namespace unitrain
