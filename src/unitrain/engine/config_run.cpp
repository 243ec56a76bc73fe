#include "unitrain/engine/config_run.h"

#include <fmt/format.h>

#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/error.h"
#include "unitrain/data/file_bytes.h"
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
  if (config.at("model").has("init_from")) {
    const std::string path = config.at("model").get_string("init_from");
    const std::string bytes = read_file_bytes(path, "model.init_from");
    NamedTensors state;
    try {
      state = load_tensor_dict({bytes.begin(), bytes.end()}, "model.init_from " + path);
    } catch (const TrainError& e) {
      throw ConfigError(e.what());  // bad input, found before training
    }
    log::info(load_module_state(module->weights(), state, config.at("model").get_bool("init_strict"),
                                "model.init_from " + path));
  }
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
