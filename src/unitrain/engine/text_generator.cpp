#include "unitrain/engine/text_generator.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "unitrain/core/error.h"
#include "unitrain/core/registry.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/run_text.h"
#include "unitrain/engine/setup/init_weights.h"
#include "unitrain/engine/train_from_config.h"
#include "unitrain/log/console.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {

namespace fs = std::filesystem;

TextGenerator::TextGenerator(std::shared_ptr<torch::nn::Module> owner, models::HfCausalLm& model,
                             std::unique_ptr<Tokenizer> tokenizer, std::vector<int64_t> stop_ids)
    : owner_(std::move(owner)),
      model_(model),
      tokenizer_(std::move(tokenizer)),
      stop_ids_(std::move(stop_ids)) {
  if (const int64_t eos = tokenizer_->eos_id(); eos >= 0) stop_ids_.push_back(eos);
}

TextGenerator::~TextGenerator() = default;

GeneratedText TextGenerator::generate(const std::string& prompt, models::GenerationOptions o,
                                      const std::vector<std::string>& stop_strings) const {
  GeneratedText out;
  if (special_tokens_) {
    for (int id : tokenizer_->special_prefix()) out.prompt_ids.push_back(id);
  }
  for (int id : tokenizer_->encode(prompt)) out.prompt_ids.push_back(id);
  o.stop_ids.insert(o.stop_ids.end(), stop_ids_.begin(), stop_ids_.end());
  // The first stop string in the decoded text so far, and where.
  auto find_stop = [&](const std::vector<int64_t>& ids, size_t& at) {
    const std::string text = tokenizer_->decode(std::vector<int>(ids.begin(), ids.end()));
    at = std::string::npos;
    for (const std::string& s : stop_strings) at = std::min(at, text.find(s));
    return at != std::string::npos;
  };
  size_t at = std::string::npos;
  const auto start = std::chrono::steady_clock::now();
  out.ids = models::generate(model_, out.prompt_ids, o, [&](const std::vector<int64_t>& ids) {
    return !stop_strings.empty() && find_stop(ids, at);
  });
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.completion = tokenizer_->decode(std::vector<int>(out.ids.begin(), out.ids.end()));
  if (!stop_strings.empty() && find_stop(out.ids, at)) {
    out.completion.resize(at);
    out.stopped_by = "stop string";
  } else if (!out.ids.empty() &&
             std::find(o.stop_ids.begin(), o.stop_ids.end(), out.ids.back()) != o.stop_ids.end()) {
    out.stopped_by = "eos";
  } else {
    out.stopped_by = "max_new_tokens";
  }
  return out;
}

std::vector<int64_t> generation_eos_ids(const std::string& generation_config_json) {
  const nlohmann::json j = nlohmann::json::parse(generation_config_json, nullptr, false);
  std::vector<int64_t> ids;
  if (!j.is_object() || !j.contains("eos_token_id")) return ids;
  const nlohmann::json& e = j["eos_token_id"];
  if (e.is_number_integer()) ids.push_back(e.get<int64_t>());
  if (e.is_array()) {
    for (const auto& id : e) {
      if (id.is_number_integer()) ids.push_back(id.get<int64_t>());
    }
  }
  return ids;
}

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
           " has model_type '", type, "'; unitrain generates with gpt2 and llama");
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
  Overrides where;
  if (fs::is_directory(source, ec)) where.emplace_back("run_dir", source);  // wherever it is now
  const Config given = load_run_config({yaml.string()}, where);
  LoadedCheckpoint loaded = load_checkpoint_module(given, checkpoint, "validated", "generate");
  models::HfCausalLm* model = loaded.module->model()->generation_model();
  UT_CHECK(model != nullptr, "generate: the run's model (model.type ",
           component_type(loaded.config.at("model")), ") is not a gpt2 or llama causal LM");
  const RunText run = run_text(loaded.config);
  const std::string t = !tokenizer.empty() ? tokenizer : run.tokenizer();
  UT_CHECK(!t.empty(), "generate: the run's ", run.no_tokenizer_text(),
           "; give one with --tokenizer");
  loaded.module->to(torch::kCPU);
  loaded.module->eval();
  log::info("generate: checkpoint " + loaded.dir);
  return TextGenerator(
      loaded.module, *model, load_tokenizer(t),
      generation_eos_ids(loaded.module->model()->hf_info()->generation_config_json));
}

}  // namespace unitrain
