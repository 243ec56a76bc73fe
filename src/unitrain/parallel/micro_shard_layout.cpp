#include "unitrain/parallel/micro_shard_layout.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <string>

#include "unitrain/core/error.h"
#include "unitrain/data/permutation.h"

namespace unitrain {
namespace {

/// "1, 2, 3, 4, 6 or 12": the world sizes that divide `g`.
std::string divisors_of(int g) {
  std::string out;
  for (int w = 1; w <= g; ++w) {
    if (g % w != 0) continue;
    if (!out.empty()) out += w == g ? " or " : ", ";
    out += std::to_string(w);
  }
  return out;
}

}  // namespace

MicroShardLayout::MicroShardLayout(int64_t numel, int micro_shards, int world_size, int rank)
    : numel_(numel), micro_shards_(micro_shards), world_size_(world_size), rank_(rank) {
  UT_CHECK(micro_shards >= 1, "distributed.reproducible: the micro-shards per step (G) must be ",
           ">= 1, got ", micro_shards);
  UT_CHECK(world_size >= 1 && micro_shards % world_size == 0,
           "distributed.reproducible: ", world_size, " processes do not divide the ", micro_shards,
           " micro-shards of a step (G = ", micro_shards, "); run on ", divisors_of(micro_shards),
           " processes, or start a new run with a G that ", world_size,
           " divides (a run resumes with the G it started with: its steps are G's)");
  UT_CHECK(numel >= 0, "distributed.reproducible: a flat buffer of ", numel, " elements");
  TORCH_INTERNAL_ASSERT(rank >= 0 && rank < world_size);
  const int64_t per_chunk = (numel + micro_shards - 1) / micro_shards;
  chunk_numel_ = std::max<int64_t>(1, (per_chunk + kChunkAlign - 1) / kChunkAlign) * kChunkAlign;
}

uint64_t micro_shard_seed(uint64_t seed, int64_t step, int64_t shard) {
  return mix_seed(mix_seed(seed, static_cast<uint64_t>(step)), static_cast<uint64_t>(shard));
}

}  // namespace unitrain
