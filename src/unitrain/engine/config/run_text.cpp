#include "unitrain/engine/config/run_text.h"

#include <filesystem>

#include "unitrain/core/registry.h"
#include "unitrain/data/build_data.h"
#include "unitrain/engine/config/run_settings.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

/// The args of component section `section` of kind `kind`, and the schema its type declares.
struct DeclaredArgs {
  Config args;
  std::shared_ptr<const Schema> schema;

  /// Whether the component declares `key` and the section gives it (not null).
  bool gives(const std::string& key) const { return schema->find(key) != nullptr && args.has(key); }
};

DeclaredArgs declared_args(const std::string& kind, const Config& section) {
  const std::string type = component_type(section);
  const std::string type_key = section.key_path("type");
  return {section.has("args") ? section.at("args") : Config(),
          catalog::find(kind, type, type_key).args};
}

}  // namespace

RunText run_text(const Config& resolved) {
  const RunSettings run = RunSettings::from_config(resolved);
  const DataOptions data = config_driven_data(run);
  RunText t;
  const DeclaredArgs train = declared_args("dataset", *data.train);
  if (train.gives("tokenizer")) t.train_tokenizer = train.args.get_string("tokenizer");
  if (train.gives("template")) t.template_text = train.args.get_string("template");
  if (train.gives("add_special_tokens")) {
    t.add_special_tokens = train.args.get_bool("add_special_tokens");
  }
  const DeclaredArgs model = declared_args("model", run.model);
  if (model.gives("pretrained")) t.pretrained = model.args.get_string("pretrained");
  return t;
}

std::string RunText::tokenizer() const {
  if (!train_tokenizer.empty()) return train_tokenizer;
  if (pretrained.empty()) return "";
  std::error_code ec;
  for (const char* name : {"tokenizer.json", "tokenizer.model"}) {
    const fs::path own = fs::path(pretrained) / name;
    if (fs::is_regular_file(own, ec)) return own.string();
  }
  return "";
}

std::string RunText::no_tokenizer_text() const {
  return "data.train names no tokenizer (data.train.args.tokenizer)" +
         (!pretrained.empty()
              ? ", and the model's folder " + pretrained +
                    " (model.args.pretrained) holds no tokenizer.json or tokenizer.model"
              : std::string());
}

std::string RunText::prompt_template(const std::string& given) const {
  if (!given.empty()) return given;
  return !template_text.empty() ? template_text : "{prompt}";
}

}  // namespace unitrain
