#include "unitrain/commands/hf_export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "unitrain/checkpoint/hf_folder.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/atomic_file.h"
#include "unitrain/core/config.h"
#include "unitrain/core/error.h"
#include "unitrain/core/registry.h"
#include "unitrain/engine/config/run_text.h"
#include "unitrain/log/console.h"
#include "unitrain/models/hf_family.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

/// The files of a Hugging Face folder that describe its tokenizer.
constexpr const char* kTokenizerFiles[] = {"tokenizer.json",
                                           "tokenizer_config.json",
                                           "special_tokens_map.json",
                                           "added_tokens.json",
                                           "vocab.json",
                                           "merges.txt",
                                           "tokenizer.model",
                                           "vocab.txt"};

std::string dtype_name(const NamedTensors& tensors) {
  if (tensors.empty()) return "float32";
  switch (tensors.front().second.scalar_type()) {
    case torch::kBFloat16:
      return "bfloat16";
    case torch::kHalf:
      return "float16";
    case torch::kDouble:
      return "float64";
    default:
      return "float32";
  }
}

void copy_file_into(const fs::path& from, const fs::path& dir) {
  std::error_code ec;
  fs::copy_file(from, dir / from.filename(), fs::copy_options::overwrite_existing, ec);
  UT_CHECK_TRAIN(!ec, "export: cannot copy ", from.string(), " into ", dir.string(), ": ",
                 ec.message());
}

}  // namespace

void check_hf_export_folder(const std::string& out) {
  UT_CHECK(!out.empty(), "--out: give the folder to write");
  const fs::path parent = fs::path(out).has_parent_path() ? fs::path(out).parent_path() : ".";
  std::error_code ec;
  UT_CHECK(fs::is_directory(parent, ec), "--out ", out, ": the folder ", parent.string(),
           fs::exists(parent, ec) ? " is not a folder" : " does not exist (create it first)");
  if (!fs::exists(out, ec)) return;
  UT_CHECK(fs::is_directory(out, ec) && fs::is_empty(out, ec), "--out ", out,
           " exists: --format hf writes a new folder (give one that does not exist, or remove it)");
}

std::vector<std::string> copy_tokenizer_files(const std::string& pretrained, const Config& config,
                                              const std::string& dir) {
  std::vector<std::string> copied;
  std::error_code ec;
  const auto copy_present = [&](const fs::path& folder, const char* skip) {
    for (const char* f : kTokenizerFiles) {
      if (f == std::string(skip) || !fs::is_regular_file(folder / f, ec)) continue;
      copy_file_into(folder / f, dir);
      copied.push_back(f);
    }
  };
  if (!pretrained.empty()) copy_present(pretrained, "");
  if (!copied.empty()) return copied;
  const std::string t = run_text(config).train_tokenizer;
  if (fs::path(t).extension() != ".json") return copied;  // none, or not a tokenizer.json
  UT_CHECK_TRAIN(fs::is_regular_file(t, ec), "export: the run's tokenizer ", t,
                 " (data.train.args.tokenizer) is gone");
  fs::copy_file(t, fs::path(dir) / "tokenizer.json", fs::copy_options::overwrite_existing, ec);
  UT_CHECK_TRAIN(!ec, "export: cannot copy ", t, ": ", ec.message());
  copied.push_back("tokenizer.json");
  const fs::path beside = fs::path(t).has_parent_path() ? fs::path(t).parent_path() : ".";
  copy_present(beside, "tokenizer.json");
  return copied;
}

void write_hf_folder(ObjectiveModule& module, const Config& config, const std::string& out,
                     uint64_t max_shard_bytes, const std::string& model_card) {
  const HfModelInfo* hf = module.model()->hf_info();
  UT_CHECK(hf != nullptr, "--format hf: the run's model (model.type ",
           component_type(config.at("model")), ") is not one built from a Hugging Face folder; ",
           models::hf_family_list(),
           " are (export this one "
           "as safetensors)");
  NamedTensors state = module_state(module.weights(), true);
  if (hf->family != nullptr && hf->family->file_name != nullptr) {  // transformers' names
    for (auto& [name, t] : state) name = hf->family->file_name(name);
  }
  write_new_folder(out, [&](const std::string& dir) {
    const fs::path partial = dir;
    std::error_code ec;
    nlohmann::json cfg = nlohmann::json::parse(hf->config_json);
    cfg["torch_dtype"] = dtype_name(state);
    write_file_atomic((partial / "config.json").string(), cfg.dump(2) + "\n");
    const fs::path source = hf->pretrained;
    if (!hf->pretrained.empty() && fs::is_regular_file(source / "generation_config.json", ec)) {
      copy_file_into(source / "generation_config.json", partial);
    } else {
      write_file_atomic((partial / "generation_config.json").string(), hf->generation_config_json);
    }
    const std::vector<std::string> weights =
        write_hf_weights(partial.string(), state, max_shard_bytes);
    const std::vector<std::string> tokenizer = copy_tokenizer_files(hf->pretrained, config, dir);
    if (!model_card.empty()) write_file_atomic((partial / "README.md").string(), model_card);
    const std::string files =
        tokenizer.empty()
            ? std::string("; no tokenizer files (the model came from a config.json alone)")
            : fmt::format(", {}", fmt::join(tokenizer, ", "));
    log::info(fmt::format("{}: config.json, generation_config.json, {} ({} tensors, {}){}{}", out,
                          fmt::join(weights, ", "), state.size(), dtype_name(state), files,
                          model_card.empty() ? "" : ", README.md"));
  });
}

void write_new_folder(const std::string& out, const std::function<void(const std::string&)>& fill) {
  const fs::path partial = out + ".partial-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(partial, ec);
  UT_CHECK_TRAIN(fs::create_directories(partial, ec), "export: cannot create ", partial.string(),
                 ": ", ec.message());
  try {
    fill(partial.string());
    if (fs::exists(out, ec)) fs::remove(out, ec);  // an empty folder (check_hf_export_folder)
    fs::rename(partial, out, ec);
    UT_CHECK_TRAIN(!ec, "export: cannot rename ", partial.string(), " to ", out, ": ",
                   ec.message());
  } catch (...) {
    fs::remove_all(partial, ec);
    throw;
  }
}

}  // namespace unitrain
