#include "unitrain/engine/callbacks/generate_samples.h"

#include <fmt/format.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "unitrain/core/error.h"
#include "unitrain/engine/callback_registry.h"
#include "unitrain/engine/config/run_text.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/log/tensorboard_events.h"
#include "unitrain/log/tensorboard_tracker.h"
#include "unitrain/log/tfrecord_writer.h"
#include "unitrain/models/model.h"
#include "unitrain/models/text_generator.h"
#include "unitrain/text/chat_template.h"

namespace unitrain {

void GenerateSamplesOptions::declare(Options<GenerateSamplesOptions>& o) {
  using T = GenerateSamplesOptions;
  o.field("prompts", &T::prompts).required().help("the prompts generated after at each validation");
  o.field("tokenizer", &T::tokenizer)
      .help(
          "a tokenizer.json or .model; null = data.train.args.tokenizer, else the model "
          "folder's (model.args.pretrained)");
  o.field("template", &T::template_text)
      .help(
          "the text each prompt is put into, with {prompt}; null = the instruct train set's "
          "template, else the prompt as it is");
  o.field("max_new_tokens", &T::max_new_tokens).min(1).help("the most tokens generated a prompt");
  o.field("temperature", &T::temperature).min(0).help("0 = greedy; > 0 samples at it");
  o.field("top_k", &T::top_k).min(0).help("sampling: only the k likeliest tokens (0 = all)");
  o.field("top_p", &T::top_p).gt(0).max(1).help("sampling: the likeliest tokens of this mass");
  o.field("repetition_penalty", &T::repetition_penalty)
      .gt(0)
      .help("> 1 discourages tokens already seen (Hugging Face's)");
  o.field("seed", &T::seed).min(0).help("sampling's seed (the same draws at every validation)");
  o.field("stop", &T::stop).help("texts that end a completion");
}

GenerateSamples::GenerateSamples(GenerateSamplesOptions options) : o_(std::move(options)) {
  generation_.max_new_tokens = o_.max_new_tokens;
  generation_.temperature = o_.temperature;
  generation_.top_k = o_.top_k;
  generation_.top_p = o_.top_p;
  generation_.repetition_penalty = o_.repetition_penalty;
  generation_.seed = static_cast<uint64_t>(o_.seed);
}

GenerateSamples::~GenerateSamples() = default;

void GenerateSamples::on_fit_start(Trainer& trainer) {
  // The Model the module trains (the config-driven one's; a TrainModule of one's own may name
  // one through trained_model()).
  model_ = trainer.module() ? trainer.module()->trained_model() : nullptr;
  models::HfCausalLm* model = model_ ? model_->generation_model() : nullptr;
  UT_CHECK(!model_ || !model_->vocab_split(),
           "callbacks: generate does not run under distributed.tensor_parallel (the model's "
           "logits are cut over its processes): generate from the run's checkpoints with "
           "`unitrain generate`, in one process");
  UT_CHECK(trainer.parallel_plan().pipeline == 1,
           "callbacks: generate does not run under distributed.pipeline_parallel (each process "
           "holds its stage's units): generate from the run's checkpoints with `unitrain "
           "generate`, in one process");
  UT_CHECK(model != nullptr,
           "callbacks: generate needs the config-driven path with a gpt2 or "
           "llama model (model.type)");
  const RunText run = run_text(trainer.config());
  const std::string tokenizer = !o_.tokenizer.empty() ? o_.tokenizer : run.tokenizer();
  UT_CHECK(!tokenizer.empty(), "callbacks: generate: args.tokenizer is null and ",
           run.no_tokenizer_text(),
           "; give the generate callback's args.tokenizer: a tokenizer.json or .model");
  std::tie(before_, after_) = TextTemplate(run.prompt_template(o_.template_text), {"prompt"},
                                           "prompt", "callbacks: generate: template")
                                  .around({});
  generator_ = std::make_unique<TextGenerator>(
      nullptr, *model, load_tokenizer(tokenizer),
      generation_eos_ids(model_->hf_info()->generation_config_json));
  generator_->add_special_tokens(run.add_special_tokens);
}

void GenerateSamples::open_events(const std::string& run_dir) {
  // Beside the tensorboard tracker's files, created after its segment's first one (which a
  // resumed run's SessionLog START opens), so that they sort after it.
  const std::string dir = run_dir + "/tensorboard";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  events_ = std::make_unique<TfRecordWriter>(dir + "/" + new_event_file_name(dir) + ".samples");
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  events_->write(tensorboard::file_version_event(now));
}

void GenerateSamples::on_validation_end(Trainer& trainer, const MetricMap&) {
  if (!generator_) return;
  Model& model = *model_;
  const bool was_training = model.is_training();
  model.eval();
  const TrainState s = trainer.state();
  std::ofstream out;
  if (trainer.rank() == 0 && !trainer.run_dir().empty()) {
    out.open(trainer.run_dir() + "/samples.jsonl", std::ios::app);
  }
  if (trainer.rank() == 0 && !trainer.run_dir().empty() && !events_) open_events(trainer.run_dir());
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (size_t i = 0; i < o_.prompts.size(); ++i) {
    const GeneratedText g =
        generator_->generate(before_ + o_.prompts[i] + after_, generation_, o_.stop);
    if (trainer.rank() != 0) continue;
    trainer.print(fmt::format("generate (step {}): {} -> {}", s.step, o_.prompts[i], g.completion));
    if (out.is_open()) {
      out << nlohmann::json{{"step", s.step},
                            {"epoch", s.epoch},
                            {"prompt", o_.prompts[i]},
                            {"completion", g.completion}}
                 .dump()
          << "\n";
    }
    if (events_) {
      events_->write(tensorboard::text_event(now, s.step, fmt::format("samples/{}", i),
                                             "**" + o_.prompts[i] + "**\n\n" + g.completion));
    }
  }
  model.train(was_training);
}

void GenerateSamples::on_fit_end(Trainer&, const FitResult&) {
  generator_.reset();
  events_.reset();
  model_ = nullptr;
}

void register_generate_callback() {
  register_callback<GenerateSamples, GenerateSamplesOptions>(
      "generate",
      "at each validation, text the gpt2/llama model generates after fixed prompts: console, "
      "run_dir/samples.jsonl (the report) and TensorBoard text");
}

}  // namespace unitrain
