#include "unitrain/commands/init_weights.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "unitrain/checkpoint/hf_folder.h"
#include "unitrain/checkpoint/model_weights.h"
#include "unitrain/checkpoint/safetensors.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/error.h"
#include "unitrain/core/file_bytes.h"
#include "unitrain/core/hf_weight_files.h"
#include "unitrain/log/console.h"
#include "unitrain/models/model.h"
#include "unitrain/objective/objective_module.h"
#include "unitrain/parallel/tensor_parallel.h"

namespace unitrain {

namespace {

/// Loads `state` (named `what` in messages) into `weights` (a model, or an ObjectiveModule's
/// weights()): floating-point tensors of another precision converted; strict or not
/// (suggesting `strict_key` when only names differ); when names differ by prefixes, a hint of
/// the `hint_key` renames that would load them ("" = none).
/// `given_names`: the file's names before the user's renames (`hint_key` set), so that a hint
/// is the whole map from the file's names, never one that undoes the user's renames.
void load_weights(torch::nn::Module& weights, NamedTensors state, const std::string& what,
                  bool strict, const std::string& hint_key, const std::string& strict_key,
                  const NamedTensors* given_names = nullptr) {
  // A model built cut over a tensor group (distributed.tensor_parallel) takes its parts.
  tp::cut_whole(weights, state);
  // Floating-point tensors of another precision (bf16 or fp16 weights for an fp32 model) are
  // converted, as PyTorch's load_state_dict does; other dtype differences stay errors.
  std::map<std::string, torch::Tensor> own;
  for (auto& [name, t] : module_state(weights, false)) own.emplace(name, t);
  std::map<std::string, int> converted;  // "BFloat16 to Float" -> count
  std::vector<std::string> file_names, model_names;
  for (auto& [name, t] : state) {
    file_names.push_back(name);
    const auto it = own.find(name);
    if (it != own.end() && t.scalar_type() != it->second.scalar_type() && t.is_floating_point() &&
        it->second.is_floating_point() && t.sizes().equals(it->second.sizes())) {
      ++converted[fmt::format("{} to {}", c10::toString(t.scalar_type()),
                              c10::toString(it->second.scalar_type()))];
      t = t.to(it->second.scalar_type());
    }
  }
  for (const auto& [name, t] : own) model_names.push_back(name);
  for (const auto& [how, count] : converted) {
    log::info(fmt::format("{}: converted {} tensors from {}", what, count, how));
  }
  const NamedTensors& hinted = given_names != nullptr ? *given_names : state;
  std::map<std::string, torch::IntArrayRef> file_shapes;
  std::vector<std::string> hinted_names;
  for (const auto& [name, t] : hinted) {
    file_shapes.emplace(name, t.sizes());
    hinted_names.push_back(name);
  }
  std::string hint = hint_key.empty()
                         ? ""
                         : key_map_hint(hinted_names, model_names, hint_key,
                                        [&](const std::string& u, const std::string& m) {
                                          return file_shapes.at(u).equals(own.at(m).sizes());
                                        });
  if (!hint.empty() && given_names != nullptr) hint += " (in place of the map given)";
  std::string summary;
  try {
    summary = load_module_state(weights, state, strict, what, strict_key) + hint;
  } catch (const ConfigError& e) {
    throw ConfigError(e.what() + hint);
  }
  // Not strict, a part of the model may stay as initialised: a warning that names it.
  const bool partial = std::set<std::string>(file_names.begin(), file_names.end()) !=
                       std::set<std::string>(model_names.begin(), model_names.end());
  (partial ? log::warn : log::info)(summary);
}

}  // namespace

void load_pretrained_weights(torch::nn::Module& weights, const HfModelInfo& hf) {
  const std::string key = "model.args.pretrained";
  UT_CHECK(is_hf_weights_folder(hf.pretrained), key, ": '", hf.pretrained,
           "' holds no weights "
           "(model.safetensors, model.safetensors.index.json with its shards, or "
           "pytorch_model.bin); for a fresh model of its shape give model.args.config: ",
           hf.pretrained, "/config.json");
  NamedTensors renamed;
  size_t skipped = 0;
  for (auto& [name, t] : read_hf_weights(hf.pretrained, key)) {
    std::string own = hf.model_name(name);
    if (own.empty()) {
      ++skipped;
    } else {
      renamed.emplace_back(std::move(own), std::move(t));
    }
  }
  if (skipped > 0) {
    log::info(
        fmt::format("{} {}: {} tensors are not weights of the model (causal-mask buffers, "
                    "rotary frequencies, a tied head's copy): not loaded",
                    key, hf.pretrained, skipped));
  }
  // Messages name the weights' file (or index), not only the folder.
  const std::string file =
      (std::filesystem::path(hf.pretrained) / hf_weight_files(hf.pretrained, key).label()).string();
  load_weights(weights, std::move(renamed), key + " " + file, true, "", "");
}

void load_init_weights(ObjectiveModule& module, const ModelSection& model) {
  const std::string path = *model.init_from;
  NamedTensors state;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    state = read_model_weights(path, "model.init_from");
  } else if (is_safetensors(path)) {
    state = read_safetensors(path, "model.init_from").tensors;
  } else {
    const std::string bytes = read_file_bytes(path, "model.init_from");
    try {
      state = load_tensor_dict({bytes.begin(), bytes.end()}, "model.init_from " + path);
    } catch (const TrainError& e) {
      throw ConfigError(e.what());  // bad input, found before training
    }
  }
  const KeyMap& key_map = model.init_key_map;
  std::string what = "model.init_from " + path;
  NamedTensors given;  // the file's names, for a hint (the tensors are shared, not copied)
  if (!key_map.empty()) {
    given = state;
    state = rename_keys(std::move(state), key_map, "model.init_key_map");
    what += " (names renamed by model.init_key_map)";
  }
  load_weights(module.weights(), std::move(state), what, model.init_strict, "model.init_key_map",
               "model.init_strict", key_map.empty() ? nullptr : &given);
}

}  // namespace unitrain
