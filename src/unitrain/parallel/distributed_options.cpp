#include "unitrain/parallel/distributed_options.h"

#include <torch/cuda.h>

#include <cmath>

#include "unitrain/core/error.h"

namespace unitrain {

std::shared_ptr<const Schema> DistributedOptions::schema() {
  static auto s = [] {
    auto s = std::make_shared<Schema>();
    s->add("backend", Type::String).def("auto").choices({"auto", "gloo", "nccl"}).help(
        "c10d backend: gloo (CPU), nccl (CUDA builds of LibTorch); auto = nccl when CUDA is "
        "available, else gloo");
    s->add("interface", Type::String).nullable().help(
        "network interface Gloo uses (e.g. eth0); null = GLOO_SOCKET_IFNAME, else the address "
        "the host name resolves to");
    s->add("timeout", Type::Float).def(300.0).min(1).help(
        "seconds rendezvous and each collective may take; a rank that stops makes the others "
        "fail after this, naming it");
    s->add("bucket_mb", Type::Float).def(25.0).min(0.001).help(
        "gradient megabytes per all-reduce, launched while backward runs");
    s->add("find_unused_parameters", Type::Bool).def(false).help(
        "parameters may get no gradient in a step: one more small all-reduce per step finds "
        "those no rank used, which the optimizer then skips (as in one process); false = a "
        "missing gradient counts as zeros");
    s->add("broadcast_buffers", Type::Bool).def(true).help(
        "copy rank 0's buffers (batch-norm statistics) to every rank at the start of each "
        "accumulation window; false = each rank keeps its own");
    return s;
  }();
  return s;
}

DistributedOptions DistributedOptions::from_config(const Config& c) {
  DistributedOptions o;
  o.backend = c.get_string("backend");
  o.interface = c.has("interface") ? c.get_string("interface") : "";
  o.timeout_seconds = c.get_double("timeout");
  o.bucket_mb = c.get_double("bucket_mb");
  o.find_unused_parameters = c.get_bool("find_unused_parameters");
  o.broadcast_buffers = c.get_bool("broadcast_buffers");
  return o;
}

ProcessGroupOptions DistributedOptions::group_options() const {
  ProcessGroupOptions o;
#ifdef UNITRAIN_CUDA
  o.backend = backend == "auto" ? (torch::cuda::is_available() ? "nccl" : "gloo") : backend;
#else
  o.backend = backend == "auto" ? "gloo" : backend;
#endif
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
