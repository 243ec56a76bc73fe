#pragma once
// `unitrain export --format hf`: a model built from a Hugging Face folder (gpt2, llama) written
// back in that layout, for transformers' from_pretrained, vLLM and llama.cpp's converter.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace unitrain {

class Config;
class ObjectiveModule;

/// HF's save_pretrained default shard size (max_shard_size="5GB").
constexpr uint64_t kHfMaxShardBytes = 5'000'000'000ULL;

/// Checks `out` before anything is read: ConfigError unless its parent folder exists and `out`
/// does not (or is an empty folder).
void check_hf_export_folder(const std::string& out);

/// Makes the new folder `out` by `fill` (which writes into the folder it is given): a folder
/// beside `out`, renamed to it once complete; a failure (fill's exception, rethrown) leaves
/// no `out`. An empty `out` (check_hf_export_folder) is replaced.
void write_new_folder(const std::string& out, const std::function<void(const std::string&)>& fill);

/// Copies into folder `dir` the tokenizer files (tokenizer.json, tokenizer_config.json,
/// special_tokens_map.json, ...) that the Hugging Face folder `pretrained` holds; when it holds
/// none (or is ""), the run's tokenizer.json (data.train.args.tokenizer of `config`, the run's
/// resolved config, as run_text() reads it; written as tokenizer.json) and those tokenizer files
/// beside it. Returns the names copied (none when the run has no tokenizer.json). TrainError when a
/// copy fails or the run's tokenizer is gone.
std::vector<std::string> copy_tokenizer_files(const std::string& pretrained, const Config& config,
                                              const std::string& dir);

/// Writes `module`'s model (of the run whose own config is `config`) into the new folder `out`:
/// config.json (the folder's own keys, torch_dtype as written), generation_config.json (the
/// folder's, else from the token ids), model.safetensors or its shards past `max_shard_bytes`
/// with the index, the tokenizer files (copy_tokenizer_files) and README.md with the text
/// `model_card` (none when ""). Written into a folder beside `out` and renamed: a failure leaves
/// no `out`. ConfigError when the model was not built from a Hugging Face folder.
void write_hf_folder(ObjectiveModule& module, const Config& config, const std::string& out,
                     uint64_t max_shard_bytes, const std::string& model_card = "");

}  // namespace unitrain
