#include "unitrain/engine/step/step_graph.h"

#include <ATen/autocast_mode.h>
#include <fmt/format.h>
#include <torch/torch.h>
#include <torch/version.h>

#ifdef UNITRAIN_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "unitrain/core/error.h"
#include "unitrain/engine/callback.h"
#include "unitrain/optim/optimizer.h"

namespace unitrain {

std::string step_graph_refusal(const TrainOptions& options, const GraphFacts& facts) {
  std::vector<std::string> why;
  if (!facts.cuda_build) {
    why.push_back("this unitrain was built without CUDA");
  } else if (!facts.cuda) {
    why.push_back("the run trains on the CPU (train.device: cuda)");
  }
  if (facts.world > 1) {
    why.push_back(
        fmt::format("it runs {} processes (a graph steps one process alone)", facts.world));
  }
  if (facts.accumulation > 1) {
    why.push_back(
        fmt::format("it accumulates {} micro-batches a step (train.accumulation_steps or "
                    "train.global_batch_size: one micro-batch a step)",
                    facts.accumulation));
  }
  if (facts.precision == PrecisionMode::Fp16Mixed) {
    why.push_back(
        "train.precision is fp16-mixed (its loss scale is decided on the host each "
        "step: fp32 or bf16-mixed)");
  } else if (facts.precision == PrecisionMode::Bf16True) {
    why.push_back("train.precision is bf16-true (fp32 or bf16-mixed)");
  }
  if (options.on_nonfinite != OnNonFinite::Stop) {
    why.push_back("train.on_nonfinite is not stop (a skipped update is decided on the host)");
  }
  if (options.divergence.spike_factor) {
    why.push_back("train.divergence.spike_factor is set (spikes are judged on the host each step)");
  }
  if (facts.manual) why.push_back("the module steps its own optimizers (manual optimization)");
  if (!facts.optimizer_refusal.empty()) why.push_back(facts.optimizer_refusal);
  if (facts.hooking) {
    why.push_back(
        fmt::format("callback '{}' takes hooks inside the step, which a replay does not call "
                    "(Callback::hooks_inside_step)",
                    facts.hooking->name()));
  }
  if (facts.short_batches) {
    why.push_back(
        "an epoch ends with a shorter batch, which the captured step cannot take "
        "(data.loader.drop_last: true)");
  }
  if (facts.profiling) {
    why.push_back("profile.enabled (the profiler times the phases a graph runs as one)");
  }
  if (why.empty()) return "";
  std::string text = "train.cuda_graphs: true cannot capture this run's step: ";
  for (size_t i = 0; i < why.size(); ++i) text += (i ? "; " : "") + why[i];
  return text + (why.size() > 1 ? ". Change these" : ". Change that") +
         ", or set train.cuda_graphs: false";
}

void StepGraph::keep_log(const std::string& name, const torch::Tensor& value) {
  if (!value.is_cuda()) {
    throw ConfigError(
        fmt::format("run().log('{}') logged a number (or a CPU tensor) in a step train.cuda_graphs "
                    "captures: every replay would log the capture's value. Log a tensor on the GPU "
                    "(run().log(name, tensor)), or set train.cuda_graphs: false",
                    name));
  }
  logs_.emplace_back(name, value);
}

std::vector<std::pair<std::string, torch::Tensor>> StepGraph::logged() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& [name, value] : logs_) out.emplace_back(name, value.clone());
  return out;
}

#ifdef UNITRAIN_CUDA

namespace {

/// `batch`'s names and shapes against the captured inputs': "" when they match.
std::string shape_difference(const Batch& captured, const Batch& batch) {
  if (captured.names() != batch.names()) {
    return fmt::format("names {} where the captured step had {}", fmt::join(batch.names(), ","),
                       fmt::join(captured.names(), ","));
  }
  for (const auto& [name, value] : batch) {
    const torch::Tensor& mine = captured.at(name);
    if (mine.sizes() != value.sizes() || mine.scalar_type() != value.scalar_type()) {
      return fmt::format("'{}' of shape [{}] ({}) where the captured step had [{}] ({})", name,
                         fmt::join(value.sizes(), ","), c10::toString(value.scalar_type()),
                         fmt::join(mine.sizes(), ","), c10::toString(mine.scalar_type()));
    }
  }
  return "";
}

}  // namespace

bool step_graphs_built() { return true; }

struct StepGraph::Cuda {
  explicit Cuda(torch::Device device)
      : stream(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index())) {}
  c10::cuda::CUDAStream stream;
  at::cuda::CUDAGraph graph;
  std::unique_ptr<CapturedStep> adam;  ///< the optimizer's captured step (StepCapture::make)
  bool captured = false;
};

StepGraph::StepGraph(StepRunner& runner, torch::optim::Optimizer& optimizer, torch::Device device)
    : runner_(runner),
      optimizer_(optimizer),
      capture_(capture_of(optimizer)),
      device_(device),
      cuda_(std::make_unique<Cuda>(device)) {
  const std::string why = capture_refusal(optimizer);
  if (!why.empty()) throw ConfigError("train.cuda_graphs: " + why);
  // The eager steps update as the replays will (the kernel reading a float32 learning rate
  // from the device), once the optimizer has its state (a fresh run's first step makes it):
  // where a run resumes changes none of its numbers.
  runner_.step_optimizer_with([this] {
    if (!cuda_->adam && !capture_->has_state(optimizer_)) {
      optimizer_.step();
      return;
    }
    if (!cuda_->adam) cuda_->adam = capture_->make(optimizer_);
    cuda_->adam->prepare();
    cuda_->adam->step();
  });
}

StepGraph::~StepGraph() { runner_.step_optimizer_with(nullptr); }

StepGraph::StreamScope::StreamScope(StepGraph& graph) {
  // The loop's work so far (the model's and the optimizer's tensors) is ordered before the
  // stream's first step; the stream then carries everything until the scope ends, when the
  // device's default stream waits for it.
  c10::cuda::CUDAStream stream = graph.cuda_->stream;
  at::cuda::CUDAEvent ready;
  ready.record(c10::cuda::getCurrentCUDAStream(stream.device_index()));
  ready.block(stream);
  auto* guard = new c10::cuda::CUDAStreamGuard(stream);
  guard_ = std::shared_ptr<void>(guard, [stream](void* g) {
    delete static_cast<c10::cuda::CUDAStreamGuard*>(g);
    at::cuda::CUDAEvent done;
    done.record(stream);
    done.block(c10::cuda::getCurrentCUDAStream(stream.device_index()));
  });
}

StepGraph::StreamScope::~StreamScope() = default;

void StepGraph::capture(const Batch& batch, int64_t step) {
  torch::NoGradGuard no_grad;
  for (const auto& [name, value] : batch) inputs_.set(name, value.clone());
  if (!cuda_->adam) cuda_->adam = capture_->make(optimizer_);
  // The last eager step's zero_grad freed the gradients (one process: set to none), so the
  // captured backward makes them in the graph's memory, where each replay writes them again
  // (a gradient still there would be added to, replay after replay).
  for (const auto& group : optimizer_.param_groups()) {
    for (const auto& p : group.params()) {
      UT_CHECK(!p.grad().defined(),
               "train.cuda_graphs: a gradient outlived the step before "
               "the capture (of a parameter of shape ",
               p.sizes(), ")");
    }
  }
  cuda_->adam->prepare();       // (the capture runs no kernel: this step's values for its replay)
  cuda_->stream.synchronize();  // once: nothing of the eager steps still running
  const bool cache = at::autocast::is_autocast_cache_enabled();
  at::autocast::set_autocast_cache_enabled(false);  // casts are made inside the graph
  capturing_ = true;
  try {
#if TORCH_VERSION_MAJOR >= 2
    // Other threads (the loader's copies) may use the GPU while this one captures.
    cuda_->graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
#else
    cuda_->graph.capture_begin();
#endif
    try {
      torch::AutoGradMode grad(true);
      outputs_ = runner_.step_body(
          inputs_, [this] { cuda_->adam->step(); }, step);
    } catch (...) {
      try {
        cuda_->graph.capture_end();
      } catch (...) {
      }
      throw;
    }
    cuda_->graph.capture_end();
  } catch (const std::exception& e) {
    capturing_ = false;
    at::autocast::set_autocast_cache_enabled(cache);
    throw ConfigError(fmt::format(
        "train.cuda_graphs: step {} could not be captured: {}. A captured step must not read "
        "values on the host (.item(), printing a tensor, a shape that depends on the data) nor "
        "synchronise the GPU; set train.cuda_graphs: false to train it uncaptured",
        step, e.what()));
  }
  capturing_ = false;
  at::autocast::set_autocast_cache_enabled(cache);
  cuda_->captured = true;
}

MicroStep StepGraph::step(const Batch& batch, StepDecision mine, int64_t step) {
  if (!cuda_->captured) {
    capture(batch, step);  // (prepares this step's values)
  } else {
    const std::string difference = shape_difference(inputs_, batch);
    if (!difference.empty()) {
      throw ConfigError(fmt::format(
          "train.cuda_graphs: the batch of step {} has {}: a captured step takes batches of one "
          "shape (equal-length sequences, data.loader.drop_last: true), or set "
          "train.cuda_graphs: false",
          step, difference));
    }
    cuda_->adam->prepare();
  }
  {
    torch::NoGradGuard no_grad;
    for (const auto& [name, value] : batch) {
      inputs_.at(name).copy_(value, /*non_blocking=*/true);
    }
  }
  cuda_->graph.replay();
  MicroStep m;
  m.window_end = true;
  m.loss = outputs_.loss.clone();
  for (const auto& [name, value] : outputs_.metrics) {
    m.metrics[name] = MetricValue(value.value.clone(), value.weight, value.exp_of_mean);
  }
  if (outputs_.norm.defined()) m.norm = outputs_.norm.clone();
  runner_.step_body_done(m, mine, step);
  return m;
}

#else

bool step_graphs_built() { return false; }

struct StepGraph::Cuda {};

StepGraph::StepGraph(StepRunner& runner, torch::optim::Optimizer& optimizer, torch::Device device)
    : runner_(runner), optimizer_(optimizer), device_(device) {
  throw ConfigError("train.cuda_graphs: this unitrain was built without CUDA");
}

StepGraph::~StepGraph() = default;

StepGraph::StreamScope::StreamScope(StepGraph&) {}

StepGraph::StreamScope::~StreamScope() = default;

void StepGraph::capture(const Batch&, int64_t) {
  throw ConfigError("train.cuda_graphs: this unitrain was built without CUDA");
}

MicroStep StepGraph::step(const Batch&, StepDecision, int64_t) {
  throw ConfigError("train.cuda_graphs: this unitrain was built without CUDA");
}

#endif

}  // namespace unitrain
