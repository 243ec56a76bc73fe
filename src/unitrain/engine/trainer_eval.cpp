// The Trainer's passes outside fit()'s loop: evaluate() (what `unitrain eval` runs) and test()
// after fit(), with the precision fit() trained in.
#include <torch/torch.h>

#include "unitrain/core/error.h"
#include "unitrain/data/loader.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/engine/results/summary_file.h"
#include "unitrain/engine/setup/run_device.h"
#include "unitrain/engine/step/pipeline_step.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/log/console.h"
#include "unitrain/log/run_logger.h"
#include "unitrain/precision/precision.h"

namespace unitrain {

MetricMap Trainer::evaluate(TrainModule& module, DatasetPtr data, EvalSplit split,
                            const std::string& prefix) {
  Loader loader(std::move(data), settings_->loader.in_order(), 0,
                prefix == "test" ? "data.test" : "data.val");
  // After fit(), as it trained; otherwise (unitrain eval) the mixed modes' autocast, and
  // float32 for bf16-true (its checkpoints hold the float32 master weights).
  std::unique_ptr<Precision> mixed;
  const PrecisionMode mode = options().precision;
  if (!precision_ && (mode == PrecisionMode::Bf16Mixed || mode == PrecisionMode::Fp16Mixed)) {
    mixed = std::make_unique<Precision>(mode, module.weights(), options().loss_scaler);
  }
  return unitrain::evaluate(module, loader, split, prefix, options().test_mode ? 1 : -1,
                            precision_ ? precision_.get() : mixed.get(),
                            options().eval_token_key());
}

MetricMap Trainer::test(TrainModule& module, DatasetPtr data) {
  UT_CHECK(data != nullptr, "test() needs test data (data.test)");
  const int64_t size = data->size();
  MetricMap m;
  module_ = &module;
  try {
    callbacks_.call("on_test_start", &Callback::on_test_start);
    Loader loader(std::move(data), settings_->loader.in_order(), 0, "data.test");
    EvalPass pass;
    pass.max_batches = options().test_mode ? 1 : -1;
    pass.hooks = &callbacks_;
    pass.precision = precision_.get();
    pass.token_key = options().eval_token_key();
    // distributed.pipeline_parallel: the module's stage holds its units alone; each batch
    // runs through the stages as validation's do.
    std::unique_ptr<PipelineStep> staged;
    if (parallel_.stage) {
      staged = std::make_unique<PipelineStep>(module, parallel_.stage, device_of(module.weights()));
      pass.pipeline = staged.get();
    }
    const MetricAccumulator sums = evaluate_sums(module, loader, EvalSplit::Test, pass);
    for (const auto& [name, value] : sums.result()) m["test/" + name] = value;
    callbacks_.call("on_test_end", &Callback::on_test_end, m);
  } catch (const std::exception& e) {
    module_ = nullptr;
    callbacks_.on_exception(e);
    throw;
  }
  module_ = nullptr;
  if (last_fit_.rank != 0) return m;
  if (!run_dir_ready_ || options().test_mode) {  // no run folder to write to: the console only
    RunLogger(settings_->log, "").log({0, 0, 0, 0, m});
    return m;
  }
  const FitResult& fit = last_fit_.result;
  RunLogger logger(settings_->log, run_dir(), last_fit_.log_events);
  logger.log({fit.state.step, fit.state.epoch, fit.state.samples, fit.seconds, m});
  logger.finish();
  last_fit_.log_events = logger.events();
  log::info("test results: " +
            write_test_results(run_dir(), m, fit.state.step, size, fit.last_checkpoint));
  return m;
}

}  // namespace unitrain
