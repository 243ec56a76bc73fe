#include "unitrain/data/transform.h"

#include <torch/torch.h>

#include <mutex>

#include "unitrain/data/permutation.h"

namespace unitrain {

SampleRng::SampleRng(const ReadContext& context, int64_t index)
    : state_(mix_seed(mix_seed(context.seed, static_cast<uint64_t>(context.epoch)),
                      static_cast<uint64_t>(index))) {}

Registry<TransformPtr>& transform_registry() {
  static Registry<TransformPtr> registry("transform");
  return registry;
}

Registry<CollatePtr>& collate_registry() {
  static Registry<CollatePtr> registry("collate");
  return registry;
}

void register_builtin_transforms() {
  static std::once_flag once;
  std::call_once(once, [] {
    detail::register_image_transforms();
    detail::register_sequence_transforms();
    detail::register_collates();
  });
}

TransformedDataset::TransformedDataset(DatasetPtr inner, std::vector<TransformPtr> transforms,
                                       CollatePtr collate)
    : DatasetView(std::move(inner)),
      transforms_(std::move(transforms)),
      collate_(std::move(collate)) {}

Batch TransformedDataset::get(int64_t index) const {
  SampleRng rng(ReadContext{}, index);
  Batch example = inner_->get(index);
  for (const auto& t : transforms_) t->apply(example, rng);
  return example;
}

Batch TransformedDataset::get_batch(const std::vector<int64_t>& indices) const {
  return read_batch(indices, ReadContext{});
}

Batch TransformedDataset::read_batch(const std::vector<int64_t>& indices,
                                     const ReadContext& context) const {
  std::vector<Batch> examples;
  std::vector<SampleRng> rngs;
  examples.reserve(indices.size());
  rngs.reserve(indices.size());
  // In-memory data: one gather for the whole batch, cut into example views (cheaper than a
  // get() per example; transforms write new tensors, never into these views). Otherwise
  // (files, decoding, variable lengths) example by example.
  if (inner_->in_memory()) {
    const Batch whole = inner_->get_batch(indices);
    examples.resize(indices.size());
    for (const auto& [name, tensor] : whole) {
      std::vector<torch::Tensor> parts = tensor.unbind(0);
      for (size_t j = 0; j < parts.size(); ++j) examples[j].set(name, std::move(parts[j]));
    }
  } else {
    for (int64_t i : indices) examples.push_back(inner_->get(i));
  }
  for (size_t j = 0; j < indices.size(); ++j) {
    rngs.emplace_back(context, indices[j]);
    for (const auto& t : transforms_) t->apply(examples[j], rngs.back());
  }
  if (collate_) return collate_->collate(examples, rngs);
  return collate(examples, indices);
}

}  // namespace unitrain
