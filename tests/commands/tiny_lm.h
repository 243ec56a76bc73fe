#pragma once
// A tiny gpt2 Hugging Face folder and a run that fine-tunes it, for the commands' tests of
// language models (generate, perplexity, PEFT adapters).
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>

#include "test_util.h"
#include "unitrain/checkpoint/hf_folder.h"
#include "unitrain/models/hf_causal_lm.h"

namespace unitrain::test {

/// A word-level tokenizer.json of 16 words whose post_processor (TemplateProcessing) puts <s>
/// (id 0) before a text, as Llama-3's puts <|begin_of_text|>: <s>, then a..o as ids 1..15.
inline std::string bos_tokenizer_json() {
  nlohmann::json vocab = {{"<s>", 0}};
  for (int i = 1; i < 16; ++i) vocab[std::string(1, char('a' + i - 1))] = i;
  const nlohmann::json bos = {{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}};
  const nlohmann::json a = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  return nlohmann::json{
      {"version", "1.0"},
      {"added_tokens", {{{"id", 0}, {"content", "<s>"}, {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "Whitespace"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {bos, a}},
        {"pair", {bos, a, a}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {0}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder", nullptr},
      {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<s>"}}}}
      .dump();
}

/// A tiny gpt2 Hugging Face folder (context 32; seeded weights rounded to what float16 and
/// bfloat16 both hold) saved in `dtype`, with bos_tokenizer_json(): the same model whatever the
/// dtype.
inline std::string gpt2_folder_in(torch::Dtype dtype) {
  const std::string dir = temp_dir();
  write_file(dir + "/config.json",
             R"({"model_type": "gpt2", "vocab_size": 16, "n_positions": 32, "n_embd": 8, )"
             R"("n_layer": 1, "n_head": 2, "bos_token_id": 0, "eos_token_id": 15})");
  write_file(dir + "/tokenizer.json", bos_tokenizer_json());
  torch::manual_seed(5);
  models::HfModelOptions o;
  o.config = dir + "/config.json";
  models::Gpt2Impl model(o);
  NamedTensors weights;
  for (const auto& p : model.named_parameters()) {
    weights.emplace_back(p.key(),
                         p.value().detach().to(torch::kHalf).to(torch::kBFloat16).to(dtype));
  }
  write_hf_weights(dir, weights, uint64_t(1) << 30);
  return dir;
}

/// Lines of the folder's words to train on and measure.
inline std::string tiny_lm_text() {
  return write_file(temp_dir() + "/text.txt",
                    "a b c d e f g\nh i j k\n\nl m n o a b\nc c d d e e f f g g\n");
}

/// A run in `run_dir` that fine-tunes gpt2 `folder` on `text` for `steps` steps (`more`: YAML
/// lines added at the end, e.g. a model section's lora).
inline std::string tiny_lm_run_yaml(const std::string& run_dir, const std::string& folder,
                                    const std::string& text, int steps = 2,
                                    const std::string& model_more = "") {
  return "run_dir: " + run_dir + "\nseed: 3\n" +
         "model: {type: gpt2, args: {pretrained: " + folder + "}" + model_more + "}\n" +
         "objective: {losses: [{type: cross_entropy}]}\n"
         "data: {train: {type: text, args: {paths: [" +
         text + "], tokenizer: " + folder +
         "/tokenizer.json}},\n"
         "       collate: {type: pad}, loader: {batch_size: 2, workers: 0}}\n"
         "optimizer: {type: adamw, lr: 0.01}\n"
         "train: {max_length: " +
         std::to_string(steps) + " steps, threads: 1}\n";
}

}  // namespace unitrain::test
