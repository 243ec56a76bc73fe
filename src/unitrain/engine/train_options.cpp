#include "unitrain/engine/train_options.h"

#include <cstdlib>
#include <thread>

#include "unitrain/core/error.h"

namespace unitrain {

std::shared_ptr<const Schema> TrainOptions::schema() {
  static auto s = [] {
    auto s = std::make_shared<Schema>();
    s->add("max_length", Type::Duration).def("10 epochs").help("how long to train (epochs, steps or samples)");
    s->add("accumulation_steps", Type::Int).def(1).min(1).help(
        "micro-batches whose gradients are summed before one optimizer step");
    s->add("global_batch_size", Type::Int).nullable().gt(0).help(
        "samples per optimizer step over all processes; sets accumulation_steps (both given must agree)");
    s->add("clip_grad_norm", Type::Float).def(0.0).min(0).help(
        "clip the global gradient L2 norm to this value before each step; 0 = off");
    s->add("threads", Type::String).def("auto").help(
        "intra-op threads; auto = cores available / worker processes on this machine");
    s->add("on_nonfinite", Type::String).def("stop").choices({"stop", "skip"}).help(
        "a NaN/Inf loss or gradient: stop with a message, or skip that update and count it");
    s->add("val_every", Type::Duration).def("1 epoch").help("how often to run validation");
    s->add("log_every", Type::Duration).def("10 steps").help("how often to log training metrics");
    s->add("test_mode", Type::Bool).def(false).help(
        "run one training batch and one validation batch, then exit (a smoke test of the setup)");
    return s;
  }();
  return s;
}

TrainOptions TrainOptions::from_config(const Config& c) {
  TrainOptions o;
  o.max_length = c.get_duration("max_length");
  o.accumulation_steps = c.get_int("accumulation_steps");
  if (c.has("global_batch_size")) o.global_batch_size = c.get_int("global_batch_size");
  o.clip_grad_norm = c.get_double("clip_grad_norm");
  std::string threads = c.get_string("threads");
  if (threads != "auto") {
    char* end = nullptr;
    long n = std::strtol(threads.c_str(), &end, 10);
    UT_CHECK(end && *end == '\0' && n > 0, c.key_path("threads"),
             " must be 'auto' or a positive integer, got '", threads, "'");
    o.threads = n;
  }
  o.on_nonfinite = c.get_string("on_nonfinite") == "skip" ? OnNonFinite::Skip : OnNonFinite::Stop;
  o.val_every = c.get_duration("val_every");
  o.log_every = c.get_duration("log_every");
  o.test_mode = c.get_bool("test_mode");
  UT_CHECK(o.max_length.count > 0, c.key_path("max_length"), " must be more than 0, got '",
           o.max_length.str(), "'");
  UT_CHECK(o.val_every.count > 0, c.key_path("val_every"), " must be more than 0");
  UT_CHECK(o.log_every.count > 0, c.key_path("log_every"), " must be more than 0");
  return o;
}

int64_t TrainOptions::resolve_accumulation(int64_t batch_size, int64_t world_size) const {
  if (!global_batch_size) return accumulation_steps;
  int64_t per_step = batch_size * world_size;
  UT_CHECK(*global_batch_size % per_step == 0, "train.global_batch_size ", *global_batch_size,
           " is not a multiple of data.loader.batch_size x processes = ", batch_size, " x ",
           world_size, " = ", per_step);
  int64_t steps = *global_batch_size / per_step;
  UT_CHECK(accumulation_steps == 1 || accumulation_steps == steps,
           "train.global_batch_size ", *global_batch_size, " implies accumulation_steps ", steps,
           " but train.accumulation_steps is ", accumulation_steps, "; give only one of them");
  return steps;
}

int64_t TrainOptions::resolve_threads() const {
  if (threads > 0) return threads;
  int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  int64_t local_workers = 1;
  if (const char* env = std::getenv("LOCAL_WORLD_SIZE")) local_workers = std::max(1L, std::atol(env));
  return std::max<int64_t>(1, cores / local_workers);
}

}  // namespace unitrain
