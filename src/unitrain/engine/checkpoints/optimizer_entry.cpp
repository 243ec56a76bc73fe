// The optimizer's state in a checkpoint: optimizer.pt, or under distributed.zero one partition
// per rank (optimizer-partition-rank-<R>.pt), read back from any number of ranks: each run takes
// what it needs (with ZeRO, its own partition's state).
#include <torch/torch.h>

#include <optional>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/checkpoint/tensor_cut.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/checkpoints/checkpoint_entries.h"
#include "unitrain/engine/checkpoints/rank_files.h"
#include "unitrain/parallel/optimizer_sharding.h"
#include "unitrain/parallel/pipeline_stage.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/sharded_parameters.h"
#include "unitrain/precision/master_weights.h"

namespace unitrain {
namespace files = checkpoint_files;
namespace {

/// The files of `in` that hold the optimizer's state by parameter: optimizer.pt, else every ZeRO
/// 1/2 partition; TrainError when there are none.
std::vector<std::string> by_parameter_files(const CheckpointRead& in) {
  if (in.has(files::kOptimizer)) return {files::kOptimizer};
  std::vector<std::string> out;
  for (int r = 0; in.has(files::optimizer_partition(r)); ++r) {
    out.push_back(files::optimizer_partition(r));
  }
  UT_CHECK_TRAIN(!out.empty(), in.dir, " holds no optimizer state (", files::kOptimizer, " or ",
                 files::optimizer_partition(0), ")");
  return out;
}

class OptimizerEntry : public CheckpointEntry {
 public:
  OptimizerEntry(torch::optim::Optimizer& optimizer, const torch::nn::Module& model,
                 ProcessGroup* group, OptimizerSharding* sharding, std::string root,
                 const ShardedParameters* sharded, const TensorCut* cut,
                 const MasterWeights* masters)
      : optimizer_(optimizer),
        model_(model),
        group_(group),
        sharding_(sharding),
        sharded_(sharded),
        root_(std::move(root)),
        cut_(cut),
        masters_(masters) {}

  void save(CheckpointWrite& out) override {
    // distributed.tensor_parallel: the writer's tensor group joins the state of the cut
    // parameters (every process of it takes part); the file is written from the whole state.
    // With distributed.zero 1 or 2 each replica's group joins its own partition's, and the
    // first process of each group writes it.
    std::optional<WholeOptimizerState> whole;
    if (cut_) whole.emplace(optimizer_, named_parameters(), *cut_, sharding_ != nullptr);
    std::vector<CheckpointFile> partitions;
    const bool first_part = !cut_ || !cut_->group || cut_->group->rank() == 0;
    const bool staged = cut_ && cut_->stage;
    // distributed.pipeline_parallel: each stage holds the state of its own parameters, a
    // partition by parameter as ZeRO 1's (the writer's, the last stage's, is the first); a
    // parameter it holds beside another stage's (a tied head) is that stage's to write.
    std::optional<BorrowedStateAside> aside;
    if (staged) aside.emplace(optimizer_, *cut_);
    // Under a pipeline, every stage's replicas write theirs (ParallelPlan::partitions).
    ProcessGroup* writers = staged ? cut_->stage->partitions.get() : group_;
    if ((sharding_ || sharded_) && first_part) {
      UT_CHECK_TRAIN(writers != nullptr, "the optimizer's partitions have no group to write by");
      partitions = write_rank_files(*writers, root_, out.state.state.step, "optimizer",
                                    "optimizer partition", files::optimizer_partition,
                                    [this] { return save_optimizer_state(optimizer_); });
    }
    if (staged && cut_->pipe_gathers && !sharding_) {
      partitions =
          write_rank_files(cut_->stage->group(), root_, out.state.state.step, "optimizer",
                           "optimizer partition (its pipeline stage's)", files::optimizer_partition,
                           [this] { return save_optimizer_state(optimizer_); });
    }
    if (!out.writes) return;
    out.files.push_back(
        {sharding_ || sharded_ || staged ? files::optimizer_partition(0) : files::kOptimizer,
         {},
         optimizer_state_snapshot(optimizer_, out.async, out.buffers)});
    for (CheckpointFile& f : partitions) out.files.push_back(std::move(f));
  }

  /// optimizer.pt, or a ZeRO run's partitions (from any number of ranks): this run takes what
  /// it needs (with ZeRO, its own partition's state).
  void restore(const CheckpointRead& in) override {
    if (sharded_) return restore_parts(in);
    if (in.has(files::kModelShards) && !in.has(files::kOptimizer)) return restore_flattened(in);
    std::vector<OptimizerFile> found;
    for (const std::string& name : by_parameter_files(in)) {
      found.push_back({in.read(name), in.path(name)});
    }
    if (cut_ && !cut_->splits.empty()) {
      load_cut_optimizer_state(optimizer_, named_parameters(), *cut_, std::move(found));
    } else {
      load_optimizer_state(optimizer_, std::move(found));
    }
    if (cut_) cut_->drop_elsewhere_state(optimizer_);
    if (sharding_) sharding_->drop_foreign_state();
  }

 private:
  /// distributed.zero: 3: this rank's own file at the same world size and layout, else every
  /// rank's files re-cut into this rank's parts.
  void restore_parts(const CheckpointRead& in) {
    const ShardLayout layout = sharded_->layout();
    if (!in.has(files::kModelShards)) return restore_by_parameter(in, layout);
    const std::vector<char> text = in.read(files::kModelShards);
    const ShardLayout saved =
        ShardLayout::from_json({text.begin(), text.end()}, in.path(files::kModelShards));
    UT_CHECK_TRAIN(saved.same_flats(layout), in.dir,
                   "'s parameters were flattened otherwise (other units, optimizer groups or "
                   "dtypes): its optimizer state does not fit; resume with the model and "
                   "optimizer.no_decay_bias_norm it was saved with");
    if (saved.world_size == layout.world_size) {
      const std::string name = files::optimizer_partition(in.rank);
      load_optimizer_state(optimizer_, in.read(name), in.path(name));
      return;
    }
    // Every rank's file mapped: only the elements of this rank's new parts are read.
    std::vector<OptimizerBytes> parts;
    for (int r = 0; r < saved.world_size; ++r) {
      const std::string name = files::optimizer_partition(r);
      parts.push_back(OptimizerBytes::of(in.map(name), in.path(name)));
    }
    // The optimizer's parameters, counted over its groups, are the flats of each group's key.
    std::vector<FlatCut> cuts;
    for (size_t g = 0; g < optimizer_.param_groups().size(); ++g) {
      for (size_t i = 0; i < layout.flats.size(); ++i) {
        if (layout.flats[i].key != static_cast<int>(g)) continue;
        cuts.push_back({layout.flats[i].length, saved.flats[i].part, layout.flats[i].part});
      }
    }
    load_resharded_optimizer_state(optimizer_, parts, cuts, in.rank,
                                   in.dir + "'s optimizer parts, re-cut");
  }

  /// distributed.zero: 3 from a checkpoint of a run without it (one process, or another ZeRO
  /// stage): optimizer.pt or ZeRO 1/2's partitions, by parameter, cut into this rank's parts.
  void restore_by_parameter(const CheckpointRead& in, const ShardLayout& layout) {
    std::vector<OptimizerBytes> found;  // mapped: only this rank's elements are read
    for (const std::string& name : by_parameter_files(in)) {
      found.push_back(OptimizerBytes::of(in.map(name), in.path(name)));
    }
    std::vector<std::string> order;
    for (const auto& item : model_.named_parameters(/*recurse=*/true)) order.push_back(item.key());
    load_flattened_optimizer_state(optimizer_, found, layout, order, in.rank,
                                   in.dir + "'s optimizer state, cut into parts");
  }

  /// A run without distributed.zero: 3 (one process, or another ZeRO stage) from a checkpoint
  /// of one with it: every rank's parts, by parameter.
  void restore_flattened(const CheckpointRead& in) {
    const std::vector<char> text = in.read(files::kModelShards);
    const ShardLayout saved =
        ShardLayout::from_json({text.begin(), text.end()}, in.path(files::kModelShards));
    std::map<const void*, std::string> names;
    for (const auto& item : model_.named_parameters(/*recurse=*/true)) {
      names[item.value().unsafeGetTensorImpl()] = item.key();
    }
    std::vector<std::vector<std::string>> group_names;
    for (const auto& g : optimizer_.param_groups()) {
      group_names.emplace_back();
      for (const auto& p : g.params()) {
        const auto name = names.find(p.unsafeGetTensorImpl());
        UT_CHECK_TRAIN(name != names.end(), in.dir,
                       " holds the optimizer state of a run with distributed.zero: 3 by the "
                       "model's parameter names; this optimizer trains a tensor that is not "
                       "one of the model's parameters");
        group_names.back().push_back(name->second);
      }
    }
    std::vector<OptimizerBytes> parts;
    for (int r = 0; r < saved.world_size; ++r) {
      const std::string name = files::optimizer_partition(r);
      parts.push_back(OptimizerBytes::of(in.map(name), in.path(name)));
    }
    load_optimizer_state(optimizer_, unflatten_optimizer_files(parts, saved, group_names),
                         in.dir + "'s optimizer parts, by parameter");
    if (sharding_) sharding_->drop_foreign_state();
  }

  torch::optim::Optimizer& optimizer_;
  const torch::nn::Module& model_;
  ProcessGroup* group_;
  OptimizerSharding* sharding_;
  const ShardedParameters* sharded_;
  std::string root_;
  const TensorCut* cut_;          ///< null unless distributed.tensor_parallel
  const MasterWeights* masters_;  ///< bf16-true's (null otherwise)

  /// The tensors the optimizer steps by the model's names: its parameters, or bf16-true's
  /// float32 masters of them.
  NamedTensors named_parameters() const {
    if (masters_) return masters_->parameters();
    NamedTensors out;
    for (const auto& p : model_.named_parameters()) out.emplace_back(p.key(), p.value());
    return out;
  }
};

}  // namespace

CheckpointEntryPtr optimizer_entry(torch::optim::Optimizer& optimizer,
                                   const torch::nn::Module& model, ProcessGroup* group,
                                   OptimizerSharding* sharding, std::string root,
                                   const ShardedParameters* sharded, const TensorCut* cut,
                                   const MasterWeights* masters) {
  return std::make_unique<OptimizerEntry>(optimizer, model, group, sharding, std::move(root),
                                          sharded, cut, masters);
}

}  // namespace unitrain
