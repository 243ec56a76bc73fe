#pragma once
// StepGraph: train.cuda_graphs — the optimizer step captured once as a CUDA graph and replayed.
#include <torch/optim/optimizer.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/engine/step/step_runner.h"

namespace unitrain {

struct StepCapture;

class Callback;

/// What decides whether a run's step can be captured (step_graph_refusal()).
struct GraphFacts {
  bool cuda = false;         ///< the model is on a GPU
  bool cuda_build = false;   ///< this unitrain was built with CUDA
  int world = 1;             ///< processes
  int64_t accumulation = 1;  ///< micro-batches a step
  PrecisionMode precision = PrecisionMode::Fp32;
  bool manual = false;                ///< the module steps its own optimizers
  std::string optimizer_refusal;      ///< capture_refusal() of the optimizer ("" when it can)
  const Callback* hooking = nullptr;  ///< a callback with hooks inside the step
  bool short_batches = false;         ///< an epoch ends with a shorter batch (drop_last off)
  bool profiling = false;             ///< profile.enabled
};

/// Whether this unitrain was built with CUDA (where StepGraph can capture).
bool step_graphs_built();

/// Why train.cuda_graphs cannot capture a step of a run with `options` and `facts` — each
/// reason with the key to change — or "" when it can. Checked before anything is written.
std::string step_graph_refusal(const TrainOptions& options, const GraphFacts& facts);

/// train.cuda_graphs: the first kEagerSteps steps run eagerly through the runner's phases (as
/// without graphs); the next is captured — forward, backward, clipping, the optimizer's
/// update (StepRunner::step_body, the optimizer's CapturedStep) — into one CUDA graph, which every
/// later step replays after copying its batch into the captured inputs: no kernel launch from the
/// host but the graph's. Everything runs on one side stream of the GPU (stream()), as a capture
/// needs; the caller runs its whole loop there. What the step makes on the host — a loss read,
/// a number logged, a callback's hook inside the step — would be fixed at the capture: those
/// are refused (step_graph_refusal(), capture errors naming the step), never replayed wrong.
/// The optimizer declares how its step is captured (optim/optimizer.h, StepCapture; adam's and
/// adamw's GraphedAdam reads the learning rate as float32: results equal the uncaptured run's
/// to that rounding).
class StepGraph {
 public:
  static constexpr int kEagerSteps = 3;

  StepGraph(StepRunner& runner, torch::optim::Optimizer& optimizer, torch::Device device);
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  /// While alive, the calling thread's current stream on the GPU is the graph's.
  class StreamScope {
   public:
    explicit StreamScope(StepGraph& graph);
    ~StreamScope();
    StreamScope(const StreamScope&) = delete;
    StreamScope& operator=(const StreamScope&) = delete;

   private:
    std::shared_ptr<void> guard_;
  };

  /// Whether the next step runs eagerly (the runner's phases): the first kEagerSteps steps
  /// this process takes, each counted by count_eager_step().
  bool eager() const { return eager_steps_ < kEagerSteps; }
  void count_eager_step() { ++eager_steps_; }
  /// One step on `batch` (on the GPU): captured at the first call, replayed at every call.
  /// ConfigError when the batch's names or shapes differ from the captured ones, or the step
  /// cannot be captured (naming what failed).
  MicroStep step(const Batch& batch, StepDecision mine, int64_t step);
  /// While capturing: run().log calls made in training_step, kept by the capture
  /// (keep_log()); a number logged is refused (it would be the capture's on every replay).
  bool capturing() const { return capturing_; }
  void keep_log(const std::string& name, const torch::Tensor& value);
  /// The values training_step logged, this replay's (clones, to add to the log sums).
  std::vector<std::pair<std::string, torch::Tensor>> logged() const;

 private:
  struct Cuda;  ///< the graph, its stream and memory (CUDA builds)
  void capture(const Batch& batch, int64_t step);
  StepRunner& runner_;
  torch::optim::Optimizer& optimizer_;
  const StepCapture* capture_ = nullptr;  ///< how the optimizer's step is captured (its type's)
  torch::Device device_;
  std::unique_ptr<Cuda> cuda_;
  bool capturing_ = false;
  int eager_steps_ = 0;
  Batch inputs_;       ///< the captured step's inputs, which each replay's batch is copied into
  MicroStep outputs_;  ///< its loss, metrics and gradient norm
  std::vector<std::pair<std::string, torch::Tensor>> logs_;  ///< run().log's, captured
};

}  // namespace unitrain
