#include "unitrain/parallel/distributed_options.h"

#include <cmath>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

using T = DistributedOptions;

/// The ZeRO keys: what each rank keeps of the optimizer's state, the gradients, the
/// parameters.
void declare_zero(Options<T>& o) {
  o.field("zero", &T::zero)
      .min(0)
      .max(3)
      .help(
          "ZeRO stage. 0: every rank keeps the optimizer's state for every parameter; 1: each "
          "rank keeps it for its partition of the parameters (balanced by size), steps those and "
          "broadcasts them (optimizer-state memory / ranks); 2: also gradients, each bucket "
          "reduced to its owner only and freed elsewhere; 3: also the parameters, each rank "
          "keeping an equal part of every unit of the model (a transformer block) and gathering "
          "a unit just before it runs (models with units: transformer_lm, or TrainModule::units() "
          "in C++). No effect in one process. Under distributed.tensor_parallel and "
          "pipeline_parallel (1 and 2) it shards over the replicas of each tensor group's parts "
          "and stage's parameters");
  o.field("unit_min_params", &T::unit_min_params)
      .min(0)
      .fixed("distributed.zero: 3's saved parts and optimizer state are cut by its joined units")
      .help(
          "distributed.zero: 3: the model's consecutive units are joined until each joined unit "
          "holds at least this many parameters (the last ones, if fewer, join the one before), "
          "then gathered and reduced as one: fewer, larger collectives for a model of many small "
          "units, more memory while one runs. 0 = each unit of the model on its own");
  o.field_or_auto("prefetch", &T::prefetch, &T::prefetch_auto)
      .help(
          "distributed.zero: 3: launch the gather of the next unit (forward) or of the unit "
          "before (backward) as one starts, so that the transfer overlaps the computation (at "
          "most two units whole at a time); false = each unit gathered when it runs; auto = on "
          "with NCCL (GPUs), off with Gloo (on CPUs it costs memory and gains little: "
          "docs/performance.md)");
}

/// distributed.reproducible.
void declare_reproducible(Options<T>& o) {
  o.field("reproducible", &T::reproducible)
      .min(0)
      .fixed(
          "distributed.reproducible's micro-shards are each step's batch and the order of its "
          "sums")
      .help(
          "G > 0: the same weights, optimizer state and logged losses, bit for bit, on any number "
          "of processes that divides G (and on one). Each step is cut into G micro-shards of "
          "data.loader.batch_size samples, shard i x W + r run by rank r at micro-step i (so G / W "
          "accumulation micro-steps per process), every random draw seeded from (seed, step, "
          "shard), and the gradients, losses and metrics summed in shard order whatever the "
          "world size. An epoch's samples past its last whole step (G x batch_size) are not "
          "read. Needs train.threads (and under ZeRO 3 the fused adam or adamw); refuses batch "
          "norm, manual optimization, L-BFGS and train.cuda_graphs. 0 = off (each process "
          "reduces as fast as it can)");
  o.field("reproducible_chunks", &T::reproducible_chunks)
      .min(0)
      .fixed("distributed.reproducible_chunks fixes the order of the cut layers' sums")
      .help(
          "C > 1, with distributed.reproducible: the built-in transformers' layers (or a C++ "
          "model's parallel layers) computed in C fixed chunks whatever distributed."
          "tensor_parallel: each chunk of heads, of the feed-forward's width and of the "
          "vocabulary by products of the same shapes, the chunks' partial sums gathered and "
          "added in chunk order (never an all-reduce), so the run is bitwise the same on any "
          "tensor_parallel dividing C (1 included: one process then builds the same chunked "
          "layers). C must divide the heads, key/value heads, the feed-forward's width and the "
          "vocabulary. Needed by distributed.reproducible with tensor_parallel above 1; 0 = off");
}

/// The keys that cut the model over processes: tensor_parallel, pipeline_parallel, its cuts.
void declare_plan(Options<DistributedOptions>& o) {
  o.field("tensor_parallel", &T::tensor_parallel)
      .min(1)
      .help(
          "T > 1: tensor parallelism (Megatron's split) inside data parallelism: the processes "
          "are cut into groups of T consecutive ranks (keep a group on one machine), each group "
          "computing one model whose layers are cut over its T processes (transformer_lm, gpt2 "
          "and the llama-shaped models: the embedding and head by vocabulary, attention by "
          "heads, the feed-forward by width, model.lora's adapters with their layers; a C++ "
          "model's parallel layers, parallel/tensor_parallel.h), and the groups are data-"
          "parallel replicas of one another (world = T x replicas). Checkpoints hold the "
          "model's whole tensors: a run resumes at any T. With distributed.zero 1 or 2 the "
          "replicas of each part shard its optimizer state (and gradients); with distributed."
          "reproducible and reproducible_chunks the run is bitwise one process's; refused with "
          "distributed.zero 3; 1 = off");
  o.field("pipeline_parallel", &T::pipeline_parallel)
      .min(1)
      .help(
          "P > 1: pipeline parallelism inside data parallelism: the model's units (its "
          "embeddings, each block, its head: transformer_lm, gpt2 and the llama-shaped models, or "
          "a C++ module's forward_units) cut into P stages, one a process (or a tensor group: "
          "world = T x P x replicas), each step's micro-batches (train.accumulation_steps: at "
          "least P keeps the stages busy) through them in 1F1B; process 0 runs the last stage "
          "(the loss). Checkpoints hold the model's whole tensors: a run resumes at any P. With "
          "distributed.zero 1 or 2 each stage's replicas shard its optimizer state; with "
          "distributed.reproducible bitwise one process's; refused with distributed.zero 3 and "
          "bf16-true; 1 = off");
  o.field("pipeline_cuts", &T::pipeline_cuts)
      .help(
          "the first unit of each pipeline stage after the first (distributed.pipeline_parallel "
          "- 1 increasing numbers; units count the embeddings as 0, each block, then the head), "
          "e.g. [3] puts the embeddings and blocks 0-1 on stage 0; empty: stages balanced by "
          "cost (a block's and the head's parameters; the embeddings cost nothing)");
}

}  // namespace

void DistributedOptions::declare(Options<DistributedOptions>& o) {
  o.field("backend", &T::backend)
      .choices({"auto", "gloo", "nccl"})
      .help(
          "c10d backend: gloo (CPU), nccl (CUDA builds of LibTorch); auto = nccl when the run "
          "trains on a GPU (train.device), else gloo. A launcher's world of one process trains "
          "alone, unless this names a backend: then it forms a group of one (the data-parallel "
          "path with one rank)");
  o.field("interface", &T::interface)
      .help(
          "network interface Gloo uses (e.g. eth0); null = GLOO_SOCKET_IFNAME, else the address "
          "the host name resolves to");
  o.field("timeout", &T::timeout_seconds)
      .min(1)
      .help(
          "seconds rendezvous and each collective may take; a rank that stops makes the others "
          "fail after this, naming it");
  o.field("bucket_mb", &T::bucket_mb)
      .min(0.001)
      .help("gradient megabytes per all-reduce, launched while backward runs");
  o.field("find_unused_parameters", &T::find_unused_parameters)
      .help(
          "parameters may get no gradient in a step (parts of the model used in some steps "
          "only): true says so; false warns once, naming them. Either way those no rank used get "
          "no gradient and the optimizer skips them, as in one process");
  o.field("broadcast_buffers", &T::broadcast_buffers)
      .help(
          "copy rank 0's buffers (batch-norm statistics) to every rank at the start of each "
          "accumulation window; false = each rank keeps its own");
  declare_zero(o);
  declare_reproducible(o);
  declare_plan(o);
}

ProcessGroupOptions DistributedOptions::group_options(const torch::Device& device) const {
  const bool on_gpu = device.is_cuda();
  UT_CHECK(!(backend == "gloo" && on_gpu), "distributed.backend: gloo with train.device ",
           device.str(),
           ": Gloo reduces GPU tensors only through copies to the host and back; "
           "use distributed.backend: nccl (or auto, which picks nccl on a GPU), or train.device: "
           "cpu");
  UT_CHECK(!(backend == "nccl" && !on_gpu), "distributed.backend: nccl with train.device ",
           device.str(),
           ": NCCL reduces GPU tensors only; use distributed.backend: gloo (or "
           "auto, which picks gloo on the CPU), or train.device: cuda");
  ProcessGroupOptions o;
  o.backend = backend == "auto" ? (on_gpu ? "nccl" : "gloo") : backend;
  o.device = device;
  o.interface = interface;
  o.timeout = std::chrono::milliseconds(static_cast<int64_t>(std::llround(timeout_seconds * 1000)));
  return o;
}

DataParallelOptions DistributedOptions::data_parallel_options() const {
  DataParallelOptions o;
  o.bucket_mb = bucket_mb;
  o.find_unused_parameters = find_unused_parameters;
  o.average = false;  // the Trainer scales each rank's loss by 1 / ranks
  return o;
}

}  // namespace unitrain
