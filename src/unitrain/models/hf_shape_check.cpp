#include "unitrain/models/hf_shape_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/hf_weight_files.h"
#include "unitrain/core/json_excerpt.h"
#include "unitrain/core/memory.h"
#include "unitrain/core/unit_parts.h"

namespace unitrain::models {
namespace {

namespace fs = std::filesystem;

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

double element_count(const std::vector<int64_t>& shape) {
  double n = 1;
  for (int64_t d : shape) n *= double(d);
  return n;
}

/// The tensor with the most elements, as "name [shape] (keys)".
std::string largest(const ConfigShape& s) {
  const ConfigTensor* big = &s.tensors.front();
  for (const ConfigTensor& t : s.tensors) {
    if (element_count(t.shape) > element_count(big->shape)) big = &t;
  }
  return fmt::format("{} {} from {}", big->name, shape_text(big->shape), big->keys);
}

void check_fits_memory(const ConfigShape& s) {
  double total = 0, biggest = 0;
  for (const ConfigTensor& t : s.tensors) {
    total += element_count(t.shape);
    biggest = std::max(biggest, double(element_count(t.shape)));
  }
  // Built in parts (distributed.zero: 3), a process keeps its share, and holds one tensor whole
  // while its unit is cut.
  const int parts = parts_world();
  const double kept = parts > 1 ? total / parts + biggest : total;
  const int here = MemoryShare::processes();
  const MemoryLimits limits = read_memory_limits();
  const double limit = limits.per_process(here);
  UT_CHECK(kept * 4 <= limit, s.config_path, " makes a ", s.model, " of ",
           fmt::format("{:.4g}", total), " parameters (", memory_text(kept * 4),
           parts > 1 ? fmt::format(" of them for each of {} processes", parts) : std::string(),
           " in float32; the largest is ", largest(s),
           "), more than the memory this process may use (", memory_text(limit), ": ",
           limits.source(here),
           "): processes on more machines (distributed.zero: 3 keeps a share of the model on "
           "each), or a smaller model");
}

/// "0..1", "0, 1, 5", or "no layers".
std::string layers_text(const std::set<int64_t>& layers) {
  if (layers.empty()) return "no layers";
  if (*layers.rbegin() - *layers.begin() + 1 == int64_t(layers.size())) {
    return layers.size() == 1 ? fmt::format("only layer {}", *layers.begin())
                              : fmt::format("layers {}..{}", *layers.begin(), *layers.rbegin());
  }
  std::vector<std::string> names;
  for (int64_t i : layers) names.push_back(std::to_string(i));
  return "layers " + some_names(names, 6);
}

/// The layer index of `name` under `prefix` ("transformer.h.3.ln_1.weight" -> 3), or -1.
int64_t layer_of(const std::string& name, const std::string& prefix) {
  if (name.compare(0, prefix.size(), prefix) != 0) return -1;
  int64_t i = 0;
  size_t at = prefix.size();
  for (; at < name.size() && at < prefix.size() + 9 &&
         std::isdigit(static_cast<unsigned char>(name[at]));
       ++at) {
    i = i * 10 + (name[at] - '0');
  }
  return at > prefix.size() && at < name.size() && name[at] == '.' ? i : -1;
}

void check_fits_bin_files(const ConfigShape& s, const HfWeightFiles& files) {
  double total = 0, bytes = 0;
  for (const ConfigTensor& t : s.tensors) total += element_count(t.shape);
  for (const std::string& f : files.files) {
    std::error_code ec;
    bytes += double(fs::file_size(f, ec));
  }
  // Weights in 16 bits at least: fewer bytes than that hold fewer tensors than config.json has.
  UT_CHECK(total * 2 <= bytes, s.config_path, " makes a ", s.model, " of ",
           fmt::format("{:.4g}", total), " parameters (the largest is ", largest(s),
           "), more than ", files.label(), "'s ", memory_text(bytes),
           " can hold: is config.json its weights'?");
}

void check_fits_headers(const ConfigShape& s, const HfWeightFiles& files,
                        const std::vector<HfTensorHeader>& headers,
                        const std::function<std::string(const std::string&)>& model_name) {
  const std::string config = fs::path(s.config_path).filename().string();
  std::map<std::string, const HfTensorHeader*> held;  // by the model's names
  std::set<int64_t> layers;
  for (const HfTensorHeader& h : headers) {
    const std::string own = model_name(h.name);
    if (own.empty()) continue;
    const auto [it, added] = held.emplace(own, &h);
    UT_CHECK(added, h.file, " holds ", text_excerpt(it->second->name), " and ",
             text_excerpt(h.name), ", both the model's ", text_excerpt(own), ": keep one");
    if (const int64_t i = layer_of(own, s.layer_prefix); i >= 0) layers.insert(i);
  }
  const bool layers_match =
      int64_t(layers.size()) == s.layers && (layers.empty() || *layers.rbegin() == s.layers - 1);
  UT_CHECK(layers_match, config, " says ", s.layers_key, " ", s.layers, ", but ", files.label(),
           " has ", layers_text(layers), " (", s.config_path, " is not its weights')");
  std::set<std::string> expected;
  for (const ConfigTensor& t : s.tensors) {
    expected.insert(t.name);
    const auto it = held.find(t.name);
    UT_CHECK(it != held.end(), files.label(), " has no ", t.name, ", which a ", s.model, " of ",
             s.config_path, "'s shape has");
    const HfTensorHeader& h = *it->second;
    UT_CHECK(h.shape == t.shape, config, " (", t.keys, ") makes ", t.name, " ", shape_text(t.shape),
             ", but ", h.file, " holds ", text_excerpt(h.name), " ", shape_text(h.shape), " (",
             s.config_path, " is not its weights')");
    UT_CHECK(c10::isFloatingType(h.dtype), h.file, " holds ", text_excerpt(h.name), " as ",
             c10::toString(h.dtype), ", not floating-point weights");
  }
  for (const auto& [own, h] : held) {
    UT_CHECK(expected.count(own), h->file, " holds ", text_excerpt(h->name), ", which a ", s.model,
             " of ", s.config_path, "'s shape does not have");
  }
}

}  // namespace

void check_config_shape(const ConfigShape& shape, const std::string& pretrained,
                        const std::function<std::string(const std::string&)>& model_name) {
  check_fits_memory(shape);  // a folder's weights are float32 once loaded, as a fresh model's
  if (pretrained.empty()) return;
  const std::string key = "model.args.pretrained";
  UT_CHECK(has_hf_weights(pretrained), key, ": '", pretrained,
           "' holds no weights "
           "(model.safetensors, model.safetensors.index.json with its shards, or "
           "pytorch_model.bin); for a fresh model of its shape give model.args.config: ",
           pretrained, "/config.json");
  const HfWeightFiles files = hf_weight_files(pretrained, key);
  if (!files.safetensors) {
    check_fits_bin_files(shape, files);
    return;
  }
  check_fits_headers(shape, files, hf_weight_headers(files, key), model_name);
}

}  // namespace unitrain::models
