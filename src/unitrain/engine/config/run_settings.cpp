#include "unitrain/engine/config/run_settings.h"

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/data/build_data.h"
#include "unitrain/models/model.h"
#include "unitrain/objective/objective_module.h"
#include "unitrain/optim/optimizer.h"
#include "unitrain/optim/scheduler.h"

namespace unitrain {
namespace {

void declare_config_driven(Options<RunSettings>& o) {
  using T = RunSettings;
  o.key("model", Type::Section, &T::model)
      .component("model")
      .nullable()
      .section(model_section_schema())
      .fixed("the saved weights belong to that model")
      .help("the model to train (config-driven runs)");
  o.key("objective", Type::Section, &T::objective)
      .section(objective_section_schema())
      .help("how the model's predictions become losses and metrics (config-driven runs)");
  o.key("data", Type::Section, &T::data)
      .section(data_section_schema())
      .help("datasets and the loader");
}

/// The Trainer's optimizer and schedule, built from their sections by fit().
void declare_optimization(Options<RunSettings>& o) {
  using T = RunSettings;
  o.key("optimizer", Type::Section, &T::optimizer)
      .component("optimizer", "adam")
      .section(optimizer_section_schema())
      .fixed(
          "the saved optimizer state and options belong to that optimizer (only optimizer.lr "
          "may change)")
      .help("the optimizer");
  o.key("scheduler", Type::Section, &T::scheduler)
      .component("scheduler", "constant")
      .section(scheduler_section_schema())
      .fixed_type("the schedule's state is saved")
      .help("the learning-rate schedule");
}

}  // namespace

void RunSettings::declare(Options<RunSettings>& o) {
  using T = RunSettings;
  // The folder a run is in changes nothing trained: a run folder copied or moved resumes.
  o.field("name", &T::name)
      .harmless()
      .help("the run's name, one folder name (no '/'); used in run_dir");
  o.field("seed", &T::seed)
      .fixed("the data order and random state follow the seed")
      .help(
          "seeds model init, data order and dropout: the same seed gives the same run bit for "
          "bit");
  o.field("run_dir", &T::run_dir)
      .harmless()
      .help(
          "where config.yaml, metrics.jsonl/.csv and train.log are written; ${key} refers to "
          "other keys");
  declare_config_driven(o);
  declare_optimization(o);
  o.section("train", &T::train).help("the training loop");
  o.section("log", &T::log).harmless().help("logging");
  o.section("checkpoint", &T::checkpoint)
      .harmless()
      .help("checkpoints in run_dir/checkpoints and resuming from them");
  o.section("early_stopping", &T::early_stopping)
      .help("stop when a validation metric stops improving");
  o.section("profile", &T::profile)
      .harmless()
      .help("the profiler: which optimizer steps it records (PyTorch's schedule words)");
  o.key("callbacks", Type::SectionList, &T::callbacks)
      .component("callback")
      .section(std::make_shared<Schema>())
      .def("[]")
      .free()
      .help(
          "callbacks run at the loop's hook points, in order: [{type: ema, args: {...}}]; "
          "unitrain list callbacks");
  o.section("distributed", &T::distributed)
      .harmless()
      .help(
          "data-parallel training over several processes (started by unitrain launch, torchrun, "
          "mpirun or srun)");
  o.key("user", Type::Any)
      .def("{}")
      .help("free-form keys for your own code (library users); not validated");
  o.check([](T& s, const Config&) {
    // The name becomes a folder name (run_dir) and appears in every log: text, not raw bytes.
    UT_CHECK(is_valid_utf8(s.name),
             "name must be valid UTF-8 text (it names the run folder); got '",
             escape_non_utf8(s.name), "'");
    check_folder_name("name", s.name, "runs", "run_dir");
    // data.loader alone: library runs bring their own datasets (their keys stay unread).
    s.loader = options_of<LoaderOptions>().read_resolved(s.data.at("loader"));
    s.schedule_per_epoch = schedules_per_epoch(s.scheduler);
    s.optimizer.mark_read();  // fit() builds them from their sections
    s.scheduler.mark_read();
  });
}

DataOptions config_driven_data(const RunSettings& run) {
  UT_CHECK(!run.model.is_null(),
           "missing key model: a config-driven run needs model.type "
           "(see `unitrain list` for the models)");
  DataOptions data = DataOptions::from_config(run.data);
  UT_CHECK(data.train,
           "missing key data.train: a config-driven run needs a training "
           "dataset (see `unitrain list` for the datasets)");
  return data;
}

void check_folder_name(const std::string& key, const std::string& name, const std::string& parent,
                       const std::string& folder_key) {
  UT_CHECK(!name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos, key,
           " '", name, "' must be one folder name (", parent,
           "/<name> by default): no '/', "
           "not empty, '.' or '..' (set ",
           folder_key, " for a folder elsewhere)");
}

}  // namespace unitrain
