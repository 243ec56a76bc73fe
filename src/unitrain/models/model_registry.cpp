// The model registry and the built-in models.
#include <torch/torch.h>

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

namespace {

/// Registers `name` with `schema`; the factory resolves its args against the schema again
/// (a no-op on resolved args) so it also accepts a bare `{type, args}` section.
template <typename Build>
void add_model(const std::string& name, const std::string& help, const Schema& schema,
               Build build) {
  auto shared = std::make_shared<Schema>(schema);
  model_registry().add(name, help, schema, [shared, build](const Config& args) -> ModelPtr {
    return build(shared->resolve(args));
  });
}

/// Registers `name`, a Model built from the args its options struct declares.
template <typename ModelOptions, typename ModelImpl>
void add_declared_model(const std::string& name, const std::string& help) {
  const Options<ModelOptions>& args = options_of<ModelOptions>();
  model_registry().add(name, help, *args.schema(), [&args](const Config& c) -> ModelPtr {
    return std::make_shared<ModelImpl>(args.parse(c));
  });
}

}  // namespace

void register_builtin_models() {
  static std::once_flag once;
  std::call_once(once, [] {
    using namespace models;  // NOLINT
    add_declared_model<MlpOptions, MlpImpl>(
        "mlp", "multilayer perceptron: Linear layers `sizes` with an activation between");
    add_declared_model<CnnOptions, CnnImpl>(
        "cnn", "LeNet-style convnet: conv3x3+ReLU+maxpool blocks, then 2 Linear layers");
    add_declared_model<TransformerLmOptions, TransformerLmImpl>(
        "transformer_lm",
        "decoder-only transformer language model: token ids [B, T] -> logits [B, T, vocab]");
    add_model("torchscript", "a TorchScript module saved from Python, trained as is",
              TorchScriptModel::schema(),
              [](const Config& args) { return TorchScriptModel::from_config(args); });
  });
}

}  // namespace unitrain
