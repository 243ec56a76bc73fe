#include "unitrain/commands/generate.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "unitrain/commands/init_weights.h"
#include "unitrain/commands/open_run.h"
#include "unitrain/core/error.h"
#include "unitrain/core/registry.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/config/run_text.h"
#include "unitrain/log/console.h"
#include "unitrain/models/hf_family.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The model of Hugging Face folder `dir` with its weights: built as model.type = its
/// model_type with args.pretrained = `dir`, its weights loaded as train loads them (another
/// float precision converted); ConfigError unless it generates text (Model::generation_model).
ModelPtr folder_model(const std::string& dir) {
  const std::string where = (fs::path(dir) / "config.json").string();
  const nlohmann::json config = nlohmann::json::parse(read_text(where), nullptr, false);
  const std::string type = config.is_object() ? config.value("model_type", "") : "";
  ModelPtr model;
  register_builtin_models();
  // A registered model built from a Hugging Face folder takes one as args.pretrained.
  if (model_registry().contains(type) &&
      catalog::find("model", type, where).args->find("pretrained") != nullptr) {
    YAML::Node args(YAML::NodeType::Map);
    args["pretrained"] = dir;
    model =
        model_registry().create_named(type, Config(args, "generate " + dir), where + " model_type");
  }
  UT_CHECK(model != nullptr && model->generation_model() != nullptr, "generate: ", where,
           " has model_type '", type, "'; unitrain generates with ", models::hf_family_list());
  load_pretrained_weights(*model, *model->hf_info());
  return model;
}

}  // namespace

TextGenerator load_text_generator(const std::string& source, const std::string& checkpoint,
                                  const std::string& tokenizer) {
  std::error_code ec;
  const bool folder = fs::is_regular_file(fs::path(source) / "config.json", ec);
  if (folder) {
    auto model = folder_model(source);
    model->eval();
    const fs::path own = fs::path(source) / "tokenizer.json";
    const std::string t = !tokenizer.empty() ? tokenizer : own.string();
    UT_CHECK(!tokenizer.empty() || fs::is_regular_file(own, ec), "generate: ", source,
             " holds no tokenizer.json; give one with --tokenizer");
    return TextGenerator(model, *model->generation_model(), load_tokenizer(t),
                         generation_eos_ids(model->hf_info()->generation_config_json));
  }
  const fs::path yaml =
      fs::is_directory(source, ec) ? fs::path(source) / "config.yaml" : fs::path(source);
  UT_CHECK(fs::is_regular_file(yaml, ec), "generate: ", source,
           " is neither a Hugging Face folder "
           "(config.json), a run folder (config.yaml) nor a run's YAML file");
  OpenedRun opened =
      open_run(read_run_source(source, {}).config, checkpoint, "validated", "generate");
  models::HfCausalLm* model = opened.module->model()->generation_model();
  UT_CHECK(model != nullptr, "generate: the run's model (model.type ",
           component_type(opened.config.at("model")), ") is not a causal LM of ",
           models::hf_family_list(" or "));
  const RunText run = opened.text();
  const std::string t = !tokenizer.empty() ? tokenizer : run.tokenizer();
  UT_CHECK(!t.empty(), "generate: the run's ", run.no_tokenizer_text(),
           "; give one with --tokenizer");
  opened.module->to(torch::kCPU);
  opened.module->eval();
  log::info("generate: checkpoint " + opened.dir);
  TextGenerator generator(
      opened.module, *model, load_tokenizer(t),
      generation_eos_ids(opened.module->model()->hf_info()->generation_config_json));
  generator.prompt_template(run.prompt_template(""));
  return generator;
}

}  // namespace unitrain
