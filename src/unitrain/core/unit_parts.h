#pragma once
// Building a model in parts: under distributed.zero: 3 on W processes, each unit of a model
// (TrainModule::units(): the embeddings, a block, the head) keeps only this process's 1/W of its
// parameters from the moment it is built, so that no process ever holds the whole model. The
// parameters keep their shapes (names, optimizer groups and checkpoints' layouts work); their
// values exist again only when ZeRO 3 gathers each unit once to cut its shards
// (parallel/kept_parts.h), one unit at a time. See docs/api.md ("A model too big for one
// process").
#include <torch/types.h>

#include <vector>

namespace unitrain {

/// While it lives, models built on this thread keep their units in parts: unit_built() cuts.
/// With `world` 1 it does nothing (one process holds the whole model anyway). Open it around the
/// model's construction only: a module whose units are kept must be trained by fit() with
/// distributed.zero: 3 (or another setting, which gathers them whole again at its start), on
/// the `rank` and `world` of that run. Scopes do not nest.
class BuildInParts {
 public:
  BuildInParts(int rank, int world);
  ~BuildInParts();
  BuildInParts(const BuildInParts&) = delete;
  BuildInParts& operator=(const BuildInParts&) = delete;

  /// Builds without parts while it lives (e.g. a frozen teacher built beside the model).
  class Paused {
   public:
    Paused();
    ~Paused();
    Paused(const Paused&) = delete;
    Paused& operator=(const Paused&) = delete;

   private:
    BuildInParts* paused_;
  };

  int rank() const { return rank_; }
  int world() const { return world_; }

 private:
  int rank_, world_;
};

/// The number of processes the BuildInParts scope open on this thread cuts units for (1 when
/// none is open): a model built here keeps about 1/parts_world() of its parameters.
int parts_world();

/// A model's constructor calls it after building and initialising each unit, with that unit's
/// parameters (as units() will list them): inside a BuildInParts scope of more than one process,
/// this process's part of them is kept (per dtype, the unit's parameters end to end, padded to
/// a multiple of the world size) and their own memory freed; elsewhere it does nothing. A
/// parameter whose memory is shared with another tensor (a view, tied weights) stays whole.
void unit_built(const std::vector<torch::Tensor>& params);

/// Whether `param`'s values are kept in parts (its own memory freed: reading it is an error
/// until it is gathered).
bool kept_in_parts(const torch::Tensor& param);

/// Writes this process's elements of `whole` (the parameter's whole new values, e.g. from
/// model.init_from) into `param`'s kept part. False (nothing done) when `param` is not kept.
bool load_into_parts(const torch::Tensor& param, const torch::Tensor& whole);

/// One kept flat: a unit's parameters of one dtype, end to end; this process's part of it.
struct KeptFlat {
  torch::Tensor part;  ///< elements [rank * n, (rank + 1) * n) of the flat
  int64_t length = 0;  ///< elements of the members
  int rank = 0, world = 1;
  std::vector<torch::Tensor> members;  ///< the parameters, in the flat's order
  std::vector<int64_t> offsets;        ///< each member's first element in the flat
};

/// The kept flats holding any of `params`, taken out of the keeping (their members are no
/// longer kept_in_parts; they get their values back from the flats: kept_parts.h's
/// restore_kept_parts, a collective). In the order the units were built.
std::vector<KeptFlat> take_kept_flats(const std::vector<torch::Tensor>& params);

/// Frees `t`'s memory, keeping its storage (and every view's shape) for make_tensor_memory.
void free_tensor_memory(const torch::Tensor& t);
/// Makes memory for `t`'s storage again (after free_tensor_memory), under the same storage:
/// every view of it, autograd's saved ones included, sees the new memory (uninitialised).
void make_tensor_memory(const torch::Tensor& t);

}  // namespace unitrain
