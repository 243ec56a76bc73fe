#include "unitrain/engine/loop/evaluator.h"

#include <torch/torch.h>

#include <optional>

#include "unitrain/engine/callback_list.h"
#include "unitrain/engine/loop/window_tokens.h"
#include "unitrain/engine/setup/run_device.h"
#include "unitrain/engine/step/module_error.h"
#include "unitrain/engine/step/pipeline_step.h"
#include "unitrain/parallel/shard_ordered_metrics.h"
#include "unitrain/precision/precision.h"

namespace unitrain {

namespace {

/// One validation_step (test_step) of `module` on `batch`, moved to `device` (through
/// `storage`) and run as `precision` says; a failure names the step and `where`.
StepOutput eval_step(TrainModule& module, const Batch& batch, const torch::Device& device,
                     Batch& storage, const EvalPass& pass, bool test, const std::string& where) {
  const Precision* precision = pass.precision;
  try {
    AutocastScope autocast = precision ? precision->autocast() : AutocastScope(false, {}, {});
    const Batch& there = on_device(batch, device, storage);
    const Batch& in = precision && precision->casts_inputs() ? precision->inputs(there) : there;
    if (pass.pipeline) return pass.pipeline->evaluate(in);
    return test ? module.test_step(in) : module.validation_step(in);
  } catch (...) {
    rethrow_module_error(std::string("the module's ") + (test ? "test_step" : "validation_step") +
                         " on batch " + where);
  }
}

}  // namespace

MetricAccumulator evaluate_sums(TrainModule& module, const Loader& loader, EvalSplit split,
                                const EvalPass& pass) {
  const bool test = split == EvalSplit::Test;
  torch::NoGradGuard no_grad;
  const bool was_training = module.is_training();
  module.eval();
  MetricAccumulator acc;
  const torch::Device device = device_of(module.weights());
  Batch storage;  // a batch copied to the module's device (not on the CPU)
  auto it = loader.epoch(0);
  int64_t seen = 0, index = 0;
  std::optional<Batch> last;  // kept for lockstep_batches
  CallbackList* hooks = pass.hooks;
  while (pass.max_batches < 0 || seen++ < pass.max_batches) {
    auto batch = it->next();
    if (!batch) break;
    ++index;
    if (hooks && test) hooks->call("on_test_batch_start", &Callback::on_test_batch_start, *batch);
    if (hooks && !test) {
      hooks->call("on_validation_batch_start", &Callback::on_validation_batch_start, *batch);
    }
    const StepOutput out = eval_step(module, *batch, device, storage, pass, test,
                                     std::to_string(index) + " of " + loader.name());
    if (hooks && test) hooks->call("on_test_batch_end", &Callback::on_test_batch_end, *batch, out);
    if (hooks && !test) {
      hooks->call("on_validation_batch_end", &Callback::on_validation_batch_end, *batch, out);
    }
    const int64_t n =
        pass.token_key.empty() ? batch->size() : target_tokens(*batch, pass.token_key);
    if (pass.in_order) {
      std::map<std::string, MetricValue> values = out.metrics;
      if (out.loss.defined()) values["loss"] = MetricValue(out.loss.detach());
      pass.in_order->add(values, n);
    } else {
      if (out.loss.defined()) acc.add("loss", MetricValue(out.loss.detach()), n);
      acc.add(out.metrics, n);
    }
    if (pass.lockstep_batches >= 0) last = std::move(*batch);
  }
  for (; last && index < pass.lockstep_batches; ++index) {
    eval_step(module, *last, device, storage, pass, test,
              std::to_string(index + 1) + " of " + loader.name() +
                  " (run again: the other ranks' shards have more batches)");
  }
  module.train(was_training);
  return acc;
}

std::map<std::string, double> evaluate(TrainModule& module, const Loader& loader, EvalSplit split,
                                       const std::string& prefix, int64_t max_batches,
                                       const Precision* precision, const std::string& token_key) {
  std::map<std::string, double> out;
  EvalPass pass;
  pass.max_batches = max_batches;
  pass.precision = precision;
  pass.token_key = token_key;
  const MetricAccumulator sums = evaluate_sums(module, loader, split, pass);
  for (const auto& [name, value] : sums.result()) {
    out[prefix + "/" + name] = value;
  }
  return out;
}

}  // namespace unitrain
