#pragma once
// MicroShardLayout: distributed.reproducible's plan of one optimizer step — the global batch cut
// into G micro-shards, run W at a time (one per rank), and the flat gradient cut into G chunks
// whose length does not depend on W, each rank owning a contiguous run of them.
#include <cstdint>

namespace unitrain {

/// Where each micro-shard runs and which elements of the flat gradient each rank owns.
/// - Shards: G per step (a function of the config); rank r runs shard i * W + r at micro-step i,
///   for i in [0, G / W). W must divide G.
/// - Chunks: the flat buffer (gradient, parameters, optimizer state) of `numel` elements is
///   padded with zeros to G chunks of chunk_numel() elements each, chunk_numel() a multiple of
///   kChunkAlign. Chunk boundaries depend on numel and G alone, never on W: every W divides G, so
///   every rank owns whole chunks — rank r owns chunks [r * G / W, (r + 1) * G / W), the elements
///   [owned_offset(r), owned_offset(r) + owned_numel()). Owned slices start at multiples of
///   kChunkAlign elements, so an elementwise update whose result per element does not depend on
///   where a loop starts (FusedAdam) gives on the slices what it gives on the whole buffer.
/// Throws ConfigError naming distributed.reproducible and G when W does not divide G.
class MicroShardLayout {
 public:
  /// Elements per chunk are rounded up to a multiple of this (256 bytes of float32).
  static constexpr int64_t kChunkAlign = 64;

  MicroShardLayout(int64_t numel, int micro_shards, int world_size, int rank);

  int64_t numel() const { return numel_; }
  /// G: micro-shards per step, and chunks of the flat buffer.
  int micro_shards() const { return micro_shards_; }
  int world_size() const { return world_size_; }
  int rank() const { return rank_; }

  /// Micro-steps per optimizer step on every rank: G / W.
  int micro_steps() const { return micro_shards_ / world_size_; }
  /// The shard rank `on_rank` runs at `micro_step`: micro_step * W + on_rank.
  int shard_at(int micro_step, int on_rank) const { return micro_step * world_size_ + on_rank; }

  int64_t chunk_numel() const { return chunk_numel_; }
  /// G x chunk_numel(): the length of every flat buffer laid out this way.
  int64_t padded_numel() const { return chunk_numel_ * micro_shards_; }
  /// G / W chunks per rank.
  int chunks_per_rank() const { return micro_shards_ / world_size_; }
  int owner_of_chunk(int chunk) const { return chunk / chunks_per_rank(); }
  int first_chunk_of(int on_rank) const { return on_rank * chunks_per_rank(); }
  /// Elements each rank owns: chunks_per_rank() x chunk_numel().
  int64_t owned_numel() const { return chunk_numel_ * chunks_per_rank(); }
  int64_t owned_offset(int on_rank) const { return owned_numel() * on_rank; }
  int64_t owned_offset() const { return owned_offset(rank_); }

 private:
  int64_t numel_;
  int micro_shards_;
  int world_size_;
  int rank_;
  int64_t chunk_numel_;
};

/// The seed of the random draws (dropout) of micro-shard `shard` of optimizer step `step` in a
/// run seeded `seed`: the same on whichever rank of whichever world size runs it.
uint64_t micro_shard_seed(uint64_t seed, int64_t step, int64_t shard);

}  // namespace unitrain
