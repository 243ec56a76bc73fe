#include "unitrain/engine/loop/evaluator.h"

#include <torch/torch.h>

#include <optional>

#include "unitrain/engine/callback_list.h"
#include "unitrain/engine/loop/window_tokens.h"
#include "unitrain/engine/setup/run_device.h"
#include "unitrain/engine/step/module_error.h"
#include "unitrain/parallel/shard_ordered_metrics.h"
#include "unitrain/precision/precision.h"

namespace unitrain {

MetricAccumulator evaluate_sums(TrainModule& module, const Loader& loader, EvalSplit split,
                                int64_t max_batches, CallbackList* hooks,
                                const Precision* precision, int64_t lockstep_batches,
                                const std::string& token_key, ShardOrderedMetrics* in_order) {
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
  while (max_batches < 0 || seen++ < max_batches) {
    auto batch = it->next();
    if (!batch) break;
    ++index;
    if (hooks && test) hooks->call("on_test_batch_start", &Callback::on_test_batch_start, *batch);
    if (hooks && !test) {
      hooks->call("on_validation_batch_start", &Callback::on_validation_batch_start, *batch);
    }
    StepOutput out;
    try {
      AutocastScope autocast = precision ? precision->autocast() : AutocastScope(false, {}, {});
      const Batch& there = on_device(*batch, device, storage);
      const Batch& in = precision && precision->casts_inputs() ? precision->inputs(there) : there;
      out = test ? module.test_step(in) : module.validation_step(in);
    } catch (...) {
      rethrow_module_error(std::string("the module's ") + (test ? "test_step" : "validation_step") +
                           " on batch " + std::to_string(index) + " of " + loader.name());
    }
    if (hooks && test) hooks->call("on_test_batch_end", &Callback::on_test_batch_end, *batch, out);
    if (hooks && !test) {
      hooks->call("on_validation_batch_end", &Callback::on_validation_batch_end, *batch, out);
    }
    const int64_t n = token_key.empty() ? batch->size() : target_tokens(*batch, token_key);
    if (in_order) {
      std::map<std::string, MetricValue> values = out.metrics;
      if (out.loss.defined()) values["loss"] = MetricValue(out.loss.detach());
      in_order->add(values, n);
    } else {
      if (out.loss.defined()) acc.add("loss", MetricValue(out.loss.detach()), n);
      acc.add(out.metrics, n);
    }
    if (lockstep_batches >= 0) last = std::move(*batch);
  }
  for (; last && index < lockstep_batches; ++index) {
    try {
      AutocastScope autocast = precision ? precision->autocast() : AutocastScope(false, {}, {});
      const Batch& there = on_device(*last, device, storage);
      const Batch& in = precision && precision->casts_inputs() ? precision->inputs(there) : there;
      (void)(test ? module.test_step(in) : module.validation_step(in));
    } catch (...) {
      rethrow_module_error(std::string("the module's ") + (test ? "test_step" : "validation_step") +
                           " on batch " + std::to_string(index + 1) + " of " + loader.name() +
                           " (run again: the other ranks' shards have more batches)");
    }
  }
  module.train(was_training);
  return acc;
}

std::map<std::string, double> evaluate(TrainModule& module, const Loader& loader, EvalSplit split,
                                       const std::string& prefix, int64_t max_batches,
                                       const Precision* precision, const std::string& token_key) {
  std::map<std::string, double> out;
  const MetricAccumulator sums =
      evaluate_sums(module, loader, split, max_batches, nullptr, precision, -1, token_key);
  for (const auto& [name, value] : sums.result()) {
    out[prefix + "/" + name] = value;
  }
  return out;
}

}  // namespace unitrain
