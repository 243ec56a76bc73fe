// The model registry and the built-in models (each registers itself: mlp.cpp, cnn.cpp, ...).
#include <mutex>

#include "unitrain/models/cnn.h"
#include "unitrain/models/mlp.h"
#include "unitrain/models/model.h"
#include "unitrain/models/torchscript_model.h"
#include "unitrain/models/transformer_lm.h"

namespace unitrain {

Registry<ModelPtr>& model_registry() {
  static Registry<ModelPtr> registry("model");
  return registry;
}

std::shared_ptr<const Schema> model_section_schema() {
  static const auto schema = [] {
    auto s = std::make_shared<Schema>();
    s->add("init_from", Type::String)
        .nullable()
        .free()
        .help(
            "a state_dict file (torch.save(model.state_dict()) in Python, or `unitrain export`) "
            "whose tensors initialise the model; not used when resuming from a checkpoint");
    s->add("init_strict", Type::Bool)
        .def(true)
        .free()
        .help(
            "init_from must hold exactly the model's tensors; false loads the names that match and "
            "reports the rest (shapes must still agree)");
    return std::shared_ptr<const Schema>(s);
  }();
  return schema;
}

void register_builtin_models() {
  static std::once_flag once;
  std::call_once(once, [] {
    models::register_mlp();
    models::register_cnn();
    models::register_transformer_lm();
    models::register_torchscript_model();
  });
}

}  // namespace unitrain
