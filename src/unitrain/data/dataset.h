#pragma once
// Dataset: the two-method interface every data source implements (flashlight style).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "unitrain/core/batch.h"
#include "unitrain/core/registry.h"

namespace unitrain {

/// Registers this area's built-in components (idempotent; engine's register_builtins()
/// calls every area's).
void register_builtin_datasets();

/// What a loader's read knows beyond the indices: the run's seed and the epoch, of which
/// per-example randomness (data.transforms, mlm masking) is a function, with the example's
/// index, so that a resumed run reads the same bits.
struct ReadContext {
  uint64_t seed = 0;
  int64_t epoch = 0;
};

/// A random-access collection of examples. Each example is a Batch of unbatched tensors with
/// fixed names (e.g. `x` features, `y` target). Implementations must be safe to call from
/// several loader threads at once (const methods, no shared mutable state).
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual Batch get(int64_t index) const = 0;
  /// A collated batch of the given examples. The default stacks get(i); tensor-backed datasets
  /// override it with one index_select per key.
  virtual Batch get_batch(const std::vector<int64_t>& indices) const;
  /// What the loader calls: get_batch, unless the dataset draws per-example randomness from
  /// `context` (TransformedDataset).
  virtual Batch read_batch(const std::vector<int64_t>& indices, const ReadContext& context) const {
    return get_batch(indices);
  }
  /// Facts a model config may need, e.g. `vocab_size` (text_chars), `num_classes`,
  /// `num_features`. Wrappers (split, normalize) forward their inner dataset's.
  virtual std::map<std::string, int64_t> info() const { return {}; }
  /// The names of the classes `y` indexes (class i is the i-th name), when the data names
  /// them (image_folder's folders); empty otherwise. fit() writes them to run_dir/classes.json.
  /// Wrappers forward their inner dataset's.
  virtual std::vector<std::string> class_names() const { return {}; }
  /// True when get_batch is a cheap gather from memory (no file I/O, no decoding): then
  /// `data.loader.workers: auto` reads batches in the training thread, where a hand-off to
  /// reader threads would cost more than the read.
  virtual bool in_memory() const { return false; }
};

using DatasetPtr = std::shared_ptr<const Dataset>;

/// A dataset that reads another (`inner_`: a subset, a permuted range, transforms, normalizing):
/// its info, class names and being in memory are the inner dataset's unless overridden.
class DatasetView : public Dataset {
 public:
  explicit DatasetView(DatasetPtr inner) : inner_(std::move(inner)) {}
  std::map<std::string, int64_t> info() const override { return inner_->info(); }
  std::vector<std::string> class_names() const override { return inner_->class_names(); }
  bool in_memory() const override { return inner_->in_memory(); }

 protected:
  DatasetPtr inner_;
};

/// Registered datasets (`data.train.type`), built from their resolved `args`.
Registry<DatasetPtr>& dataset_registry();

}  // namespace unitrain
