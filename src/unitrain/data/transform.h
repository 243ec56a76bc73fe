#pragma once
// Per-example transforms and collate functions (data.transforms, data.collate), run in the
// loader threads, and the dataset that applies them.
#include <memory>
#include <string>
#include <vector>

#include "unitrain/core/registry.h"
#include "unitrain/data/dataset.h"
#include "unitrain/data/sample_rng.h"

namespace unitrain {

/// One step of a per-example pipeline (an augmentation, a crop, a truncation). apply() runs in
/// the loader threads: it must be const and draw randomness from `rng` alone, so an example's
/// result is a function of (seed, epoch, index) and a resumed run reads the same bits.
class Transform {
 public:
  virtual ~Transform() = default;
  virtual void apply(Batch& example, SampleRng& rng) const = 0;
};
using TransformPtr = std::shared_ptr<const Transform>;

/// Makes one batch of transformed examples (`stack`, `pad`, `mlm`). rngs[i] continues example
/// i's stream after its transforms.
class Collate {
 public:
  virtual ~Collate() = default;
  virtual Batch collate(std::vector<Batch>& examples, std::vector<SampleRng>& rngs) const = 0;
};
using CollatePtr = std::shared_ptr<const Collate>;

/// Registered transforms (`data.transforms.<split>[i].type`) and collate functions
/// (`data.collate.type`); built-ins registered by register_builtin_datasets().
Registry<TransformPtr>& transform_registry();
Registry<CollatePtr>& collate_registry();
void register_builtin_transforms();

namespace detail {
void register_image_transforms();     // image_transforms.cpp
void register_sequence_transforms();  // sequence_transforms.cpp
void register_collates();             // collate.cpp
}  // namespace detail

/// `image` (float32 [C, H, W], contiguous) resized to [C, h, w], bilinear without
/// antialiasing: what the `resize` transform does (image_folder's `size` too). `image` itself
/// when it has that size already.
torch::Tensor resize_image(const torch::Tensor& image, int64_t h, int64_t w);

/// `inner` read example by example through `transforms` (in order), then batched by `collate`
/// (null: stacked). The loader's read_batch gives each example a SampleRng of (seed, epoch,
/// index); get()/get_batch() read as epoch 0 of seed 0. Not in memory when it transforms: the
/// per-example work is what loader threads are for.
class TransformedDataset : public DatasetView {
 public:
  TransformedDataset(DatasetPtr inner, std::vector<TransformPtr> transforms,
                     CollatePtr collate = nullptr);

  int64_t size() const override { return inner_->size(); }
  Batch get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  Batch read_batch(const std::vector<int64_t>& indices, const ReadContext& context) const override;
  bool in_memory() const override { return transforms_.empty() && inner_->in_memory(); }

 private:
  std::vector<TransformPtr> transforms_;
  CollatePtr collate_;
};

}  // namespace unitrain
