#include "unitrain/engine/run_settings.h"

namespace unitrain {

RunSettings RunSettings::from_config(const Config& c) {
  RunSettings s;
  s.train = TrainOptions::from_config(c.at("train"));
  s.loader = LoaderOptions::from_config(c.at("data").at("loader"));
  s.checkpoint = CheckpointOptions::from_config(c.at("checkpoint"));
  s.early_stopping = EarlyStoppingOptions::from_config(c.at("early_stopping"));
  s.distributed = DistributedOptions::from_config(c.at("distributed"));
  s.log = LogOptions::from_config(c.at("log"));
  s.profile = ProfileOptions::from_config(c.at("profile"));
  s.seed = static_cast<uint64_t>(c.get_int("seed"));
  s.run_dir = c.get_string("run_dir");
  s.schedule_per_epoch = c.at("scheduler").get_string("interval") == "epoch";
  return s;
}

}  // namespace unitrain
