// generate: text from a run's checkpoint or a Hugging Face folder, for one prompt or a file.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "command_line.h"
#include "commands.h"
#include "unitrain/commands/generate.h"
#include "unitrain/core/error.h"
#include "unitrain/text/chat_template.h"

namespace unitrain::cli {
namespace {

/// A prompt: text, or a chat's messages (rendered through the folder's chat template).
struct Prompt {
  std::string text;
  nlohmann::ordered_json messages;  ///< null for a text prompt
};

/// The prompts of a JSON Lines file: each line {"prompt": text}, a JSON string, or
/// {"messages": [{role, content}, ...]}.
std::vector<Prompt> read_prompts(const std::string& path) {
  std::ifstream in(path);
  UT_CHECK(in.good(), "--prompts ", path, ": cannot read the file");
  std::vector<Prompt> prompts;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto j = nlohmann::ordered_json::parse(line, nullptr, false);
    const bool object = j.is_object() && j.contains("prompt") && j["prompt"].is_string();
    const bool chat = j.is_object() && j.contains("messages") && j["messages"].is_array();
    UT_CHECK(object || chat || j.is_string(), "--prompts ", path, " line ", n,
             ": expected {\"prompt\": text}, {\"messages\": [{\"role\": ..., \"content\": ...}]} "
             "or a JSON string");
    if (chat) {
      prompts.push_back({"", j["messages"]});
    } else {
      prompts.push_back({object ? j["prompt"].get<std::string>() : j.get<std::string>(), nullptr});
    }
  }
  UT_CHECK(!prompts.empty(), "--prompts ", path, ": no prompts in the file");
  return prompts;
}

class GenerateCommand : public Subcommand {
 public:
  explicit GenerateCommand(CLI::App& app)
      : Subcommand(
            app, "generate",
            "generate text after prompts with a run's checkpoint or a Hugging Face folder "
            "(gpt2, llama, qwen2, qwen3, mistral, gemma, gemma2, gemma3_text, phi3): greedy or "
            "sampled, with a "
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
    cli_->add_flag("--chat", chat_,
                   "--prompt is a user's message: the conversation is rendered through the "
                   "folder's chat template (tokenizer_config.json's, Jinja, as transformers' "
                   "apply_chat_template with add_generation_prompt); --prompts lines may hold "
                   "{\"messages\": [...]} without it");
    cli_->add_option("--system", system_, "with --chat: a system message before the user's");
    cli_->add_option("--max-new-tokens", o_.max_new_tokens, "the most tokens generated")
        ->capture_default_str();
    cli_->add_option("--batch-size", batch_,
                     "--prompts: how many prompts generate together (padded on the left; each "
                     "gives the tokens it gives alone)")
        ->check(at_least(1))
        ->capture_default_str();
    cli_->add_option("--min-new-tokens", o_.min_new_tokens,
                     "no eos before this many new tokens (stop strings still end a completion)")
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
    UT_CHECK(!chat_ || prompts_file_.empty(),
             "generate: --chat makes --prompt a user's message; "
             "--prompts lines give {\"messages\": [...]} themselves");
    UT_CHECK(system_.empty() || chat_, "generate: --system needs --chat");
    UT_CHECK(!chat_ || template_.empty(),
             "generate: --chat renders the folder's chat template; "
             "--template is for text prompts");
    std::vector<Prompt> prompts;
    if (!prompts_file_.empty()) {
      prompts = read_prompts(prompts_file_);
    } else if (chat_) {
      nlohmann::ordered_json messages = nlohmann::ordered_json::array();
      if (!system_.empty()) messages.push_back({{"role", "system"}, {"content", system_}});
      messages.push_back({{"role", "user"}, {"content", prompt_}});
      prompts.push_back({"", messages});
    } else {
      prompts.push_back({prompt_, nullptr});
    }
    // The loading messages go to stderr, as always: stdout holds the completions alone.
    TextGenerator generator = load_text_generator(source_, checkpoint_, tokenizer_);
    generator.add_special_tokens(!no_special_tokens_);
    const TextTemplate wrap(template_.empty() ? generator.prompt_template() : template_, {"prompt"},
                            "prompt", template_.empty() ? "the run's template" : "--template");
    const auto [before, after] = wrap.around({});
    std::vector<std::vector<int64_t>> ids;
    for (const Prompt& p : prompts) {
      ids.push_back(p.messages.is_null() ? generator.prompt_ids(before + p.text + after)
                                         : generator.chat_ids(p.messages));
    }
    const std::vector<GeneratedText> texts = generator.generate_all(ids, o_, stops_, batch_);
    for (size_t i = 0; i < prompts.size(); ++i) {
      const Prompt& p = prompts[i];
      const GeneratedText& g = texts[i];
      const bool chat = !p.messages.is_null();
      if (!json_ && prompts_file_.empty()) {
        std::cout << g.completion << std::endl;
        continue;
      }
      nlohmann::ordered_json j;
      if (chat) {
        j["messages"] = p.messages;
        j["prompt_text"] = generator.chat_prompt(p.messages);
      } else {
        j["prompt"] = p.text;
      }
      j["completion"] = g.completion;
      j["prompt_ids"] = g.prompt_ids;
      j["ids"] = g.ids;
      j["stopped_by"] = g.stopped_by;
      j["seconds"] = g.seconds;
      std::cout << j.dump() << std::endl;
    }
    return 0;
  }

 private:
  std::string source_, prompt_, prompts_file_, template_, checkpoint_ = "last", tokenizer_, system_;
  std::vector<std::string> stops_;
  models::GenerationOptions o_;
  bool no_cache_ = false, no_special_tokens_ = false, json_ = false, chat_ = false;
  int64_t batch_ = 1;
};

}  // namespace

const CommandFactory make_generate_command = make_command<GenerateCommand>;

}  // namespace unitrain::cli
