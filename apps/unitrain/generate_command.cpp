// generate: text from a run's checkpoint or a Hugging Face folder, for one prompt or a file.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "unitrain/commands/generate.h"
#include "unitrain/core/error.h"
#include "unitrain/text/chat_template.h"

namespace unitrain::cli {
namespace {

/// The prompts of a JSON Lines file: each line {"prompt": text} or a JSON string.
std::vector<std::string> read_prompts(const std::string& path) {
  std::ifstream in(path);
  UT_CHECK(in.good(), "--prompts ", path, ": cannot read the file");
  std::vector<std::string> prompts;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    const bool object = j.is_object() && j.contains("prompt") && j["prompt"].is_string();
    UT_CHECK(object || j.is_string(), "--prompts ", path, " line ", n,
             ": expected {\"prompt\": text} or a JSON string");
    prompts.push_back(object ? j["prompt"].get<std::string>() : j.get<std::string>());
  }
  UT_CHECK(!prompts.empty(), "--prompts ", path, ": no prompts in the file");
  return prompts;
}

class GenerateCommand : public Subcommand {
 public:
  explicit GenerateCommand(CLI::App& app)
      : Subcommand(app, "generate",
                   "generate text after prompts with a run's checkpoint or a Hugging Face folder "
                   "(gpt2, llama, qwen2, qwen3, mistral, gemma, phi3): greedy or sampled, with a "
                   "KV cache") {
    cli_->add_option("source", source_,
                     "a run folder (its config.yaml and checkpoints), a run's YAML file, or a "
                     "Hugging Face model folder (config.json, weights, tokenizer.json)")
        ->required();
    auto* one = cli_->add_option("--prompt", prompt_, "the prompt text");
    auto* file = cli_->add_option("--prompts", prompts_file_,
                                  "a JSON Lines file of prompts ({\"prompt\": text} a line); "
                                  "prints one JSON object a prompt");
    one->excludes(file);
    cli_->add_option("--template", template_,
                     "the text the prompt is put into, with {prompt}; default: a run's train "
                     "set's template (the instruct dataset's it was fine-tuned with), else the "
                     "prompt as given");
    cli_->add_option("--max-new-tokens", o_.max_new_tokens, "the most tokens generated")
        ->capture_default_str();
    cli_->add_option("--temperature", o_.temperature, "0 = greedy; > 0 samples at it")
        ->capture_default_str();
    cli_->add_option("--top-k", o_.top_k, "sampling: only the k likeliest tokens (0 = all)")
        ->capture_default_str();
    cli_->add_option("--top-p", o_.top_p, "sampling: the likeliest tokens of this mass")
        ->capture_default_str();
    cli_->add_option("--repetition-penalty", o_.repetition_penalty,
                     "> 1 discourages tokens already seen (Hugging Face's)")
        ->capture_default_str();
    cli_->add_option("--stop", stops_, "end a completion at this text (repeatable)");
    cli_->add_option("--seed", o_.seed, "sampling's seed")->capture_default_str();
    cli_->add_flag("--no-cache", no_cache_, "recompute every position for each new token");
    cli_->add_flag("--no-special-tokens", no_special_tokens_,
                   "do not start the prompt with the tokenizer's special prefix (e.g. Llama-3's "
                   "<|begin_of_text|>), which transformers' tokenizer(text) and the instruct "
                   "dataset (add_special_tokens) put there");
    cli_->add_option("--checkpoint", checkpoint_, "a run's: best, last or a checkpoint folder")
        ->capture_default_str();
    cli_->add_option("--tokenizer", tokenizer_,
                     "a tokenizer.json or .model instead of the "
                     "source's");
    cli_->add_flag("--json", json_, "one JSON object a prompt: completion, ids, timings");
  }

  int run() override {
    UT_CHECK(!prompt_.empty() || !prompts_file_.empty(), "generate: give --prompt or --prompts");
    o_.use_cache = !no_cache_;
    o_.validate("--");
    // A template given is checked before the model is read.
    if (!template_.empty()) TextTemplate(template_, {"prompt"}, "prompt", "--template");
    const std::vector<std::string> prompts =
        prompts_file_.empty() ? std::vector<std::string>{prompt_} : read_prompts(prompts_file_);
    // The loading messages go to stderr, as always: stdout holds the completions alone.
    TextGenerator generator = load_text_generator(source_, checkpoint_, tokenizer_);
    generator.add_special_tokens(!no_special_tokens_);
    const TextTemplate wrap(template_.empty() ? generator.prompt_template() : template_, {"prompt"},
                            "prompt", template_.empty() ? "the run's template" : "--template");
    for (const std::string& p : prompts) {
      const auto [before, after] = wrap.around({});
      const GeneratedText g = generator.generate(before + p + after, o_, stops_);
      if (!json_ && prompts_file_.empty()) {
        std::cout << g.completion << std::endl;
        continue;
      }
      nlohmann::json j{{"prompt", p},  {"completion", g.completion}, {"prompt_ids", g.prompt_ids},
                       {"ids", g.ids}, {"stopped_by", g.stopped_by}, {"seconds", g.seconds}};
      std::cout << j.dump() << std::endl;
    }
    return 0;
  }

 private:
  std::string source_, prompt_, prompts_file_, template_, checkpoint_ = "last", tokenizer_;
  std::vector<std::string> stops_;
  models::GenerationOptions o_;
  bool no_cache_ = false, no_special_tokens_ = false, json_ = false;
};

}  // namespace

const CommandFactory make_generate_command = make_command<GenerateCommand>;

}  // namespace unitrain::cli
