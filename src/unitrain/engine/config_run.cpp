#include "unitrain/engine/config_run.h"

#include <fmt/format.h>

#include "unitrain/core/error.h"
#include "unitrain/data/loader.h"
#include "unitrain/log/console.h"
#include "unitrain/log/console_tracker.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {

ConfigRunResult run_config(const Config& config) {
  UT_CHECK(config.has("model"), "missing key model: a config-driven run needs model.type "
           "(see `unitrain list` for the models)");
  UT_CHECK(config.at("data").has("train"), "missing key data.train: a config-driven run needs "
           "a training dataset (see `unitrain list` for the datasets)");
  Trainer trainer(config);  // seeds torch before the model is built
  DataSplits data = build_data(config.at("data"), static_cast<uint64_t>(config.get_int("seed")));
  auto module = std::make_shared<ObjectiveModule>(config.at("model"), config.at("objective"));
  int64_t params = 0;
  for (const auto& p : module->parameters()) params += p.numel();
  log::info(fmt::format("model {}: {} parameters", config.at("model").get_string("type"), params));
  ConfigRunResult result;
  result.fit = trainer.fit(*module, data.train, data.val);
  if (data.test) {
    result.test = trainer.evaluate(*module, data.test, EvalSplit::Test, "test");
    std::string line = "test:";
    for (const auto& [k, v] : result.test) line += fmt::format(" {} {}", k, format_metric(v));
    log::info(line);
  }
  return result;
}

}  // namespace unitrain
