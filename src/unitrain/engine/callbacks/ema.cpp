#include "unitrain/engine/callbacks/ema.h"

#include <torch/torch.h>

#include <map>
#include <set>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/callback_registry.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {
namespace {
constexpr const char* kEmaEntry = checkpoint_files::kEmaEntry;
}  // namespace

void EmaOptions::declare(Options<EmaOptions>& o) {
  o.field("decay", &EmaOptions::decay)
      .min(0)
      .lt(1)
      .help("average = decay * average + (1 - decay) * weights after each update");
  o.field("every", &EmaOptions::every).min(1).help("update after every N-th optimizer step");
  o.field("evaluate", &EmaOptions::evaluate)
      .help("validate and test with the averaged weights (training weights restored after)");
}

Ema::Ema(EmaOptions options) : options_(options) {}

void Ema::keep_parts(std::vector<torch::Tensor> parts) { parts_ = std::move(parts); }

void Ema::restart_from_parts() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < parts_.size() && i < average_.size(); ++i) average_[i].copy_(parts_[i]);
}

void Ema::make_whole(const torch::nn::Module& weights,
                     const std::map<std::string, torch::Tensor>& whole) {
  parts_.clear();
  names_.clear();
  average_.clear();
  for (const auto& p : weights.named_parameters()) {
    if (!p.value().requires_grad()) continue;  // frozen: its own average
    const auto it = whole.find(p.key());
    TORCH_INTERNAL_ASSERT(it != whole.end(), "ema: no average of ", p.key());
    names_.push_back(p.key());
    average_.push_back(it->second);
  }
}

std::vector<torch::Tensor> Ema::params(Trainer& trainer) const {
  if (!parts_.empty()) return parts_;
  std::vector<torch::Tensor> out;
  for (const auto& p : trainer.module()->weights().named_parameters()) {
    if (p.value().requires_grad()) out.push_back(p.value());
  }
  return out;
}

void Ema::on_fit_start(Trainer& trainer) {
  torch::NoGradGuard no_grad;
  names_.clear();
  average_.clear();
  kept_.clear();
  if (!parts_.empty()) {
    for (const auto& p : parts_) average_.push_back(p.detach().clone());
    return;
  }
  for (const auto& p : trainer.module()->weights().named_parameters()) {
    if (!p.value().requires_grad()) continue;  // frozen (LoRA's base): its own average
    names_.push_back(p.key());
    average_.push_back(p.value().detach().clone());
  }
}

void Ema::on_after_optimizer_step(Trainer& trainer, bool skipped) {
  // state().step counts steps before this one: this is step + 1.
  if (skipped || (trainer.state().step + 1) % options_.every != 0) return;
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> now = params(trainer);
  for (size_t i = 0; i < average_.size(); ++i) {
    average_[i].mul_(options_.decay).add_(now[i].detach(), 1.0 - options_.decay);
  }
}

void Ema::on_test_start(Trainer& trainer) {
  if (average_.empty()) on_fit_start(trainer);  // test() without fit(): the weights as they are
  swap_in(trainer);
}

void Ema::swap_in(Trainer& trainer) {
  if (!options_.evaluate || !kept_.empty()) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> now = params(trainer);
  for (size_t i = 0; i < now.size(); ++i) {
    kept_.push_back(now[i].detach().clone());
    now[i].copy_(average_[i]);
  }
}

void Ema::swap_out(Trainer& trainer) {
  if (kept_.empty() || trainer.module() == nullptr) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> now = params(trainer);
  for (size_t i = 0; i < now.size(); ++i) now[i].copy_(kept_[i]);
  kept_.clear();
}

void Ema::on_save_checkpoint(Trainer&, CheckpointEntries& entries) {
  if (!parts_.empty()) return;  // the sharded entry saves the parts
  NamedTensors dict;            // on the CPU, whatever the device (a checkpoint holds CPU tensors)
  for (size_t i = 0; i < names_.size(); ++i) {
    dict.emplace_back(names_[i], average_[i].to(torch::kCPU));
  }
  const std::vector<char> bytes = save_tensor_dict(dict);
  entries[kEmaEntry] = std::string(bytes.begin(), bytes.end());
}

void Ema::on_load_checkpoint(Trainer& trainer, const CheckpointEntries& entries) {
  if (!parts_.empty()) return;  // the sharded entry restored the parts
  auto it = entries.find(kEmaEntry);
  if (it == entries.end()) {
    trainer.print("ema: the checkpoint holds no average; it starts from the resumed weights");
    return on_fit_start(trainer);
  }
  const NamedTensors saved =
      load_tensor_dict(std::vector<char>(it->second.begin(), it->second.end()), kEmaEntry);
  // By name: a distributed.zero: 3 checkpoint's parts merged come in the order of its flats;
  // an earlier unitrain's also held the frozen parameters.
  std::map<std::string, torch::Tensor> by_name(saved.begin(), saved.end());
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < names_.size(); ++i) {
    const auto s = by_name.find(names_[i]);
    UT_CHECK_TRAIN(s != by_name.end() && s->second.sizes() == average_[i].sizes(),
                   "the checkpoint's ", kEmaEntry, " does not match the model at parameter ",
                   names_[i]);
    average_[i].copy_(s->second);
  }
}

bool Ema::on_load_validated_weights(Trainer&, torch::nn::Module& weights,
                                    const CheckpointEntries& entries) {
  auto it = entries.find(kEmaEntry);
  if (!options_.evaluate || it == entries.end()) return false;
  const NamedTensors saved =
      load_tensor_dict(std::vector<char>(it->second.begin(), it->second.end()), kEmaEntry);
  auto params = weights.named_parameters();
  std::set<std::string> averaged;  // every trained parameter has its average
  for (const auto& [name, average] : saved) averaged.insert(name);
  for (const auto& p : params) {
    UT_CHECK_TRAIN(!p.value().requires_grad() || averaged.count(p.key()) > 0, "the checkpoint's ",
                   kEmaEntry, " holds no average of parameter ", p.key());
  }
  torch::NoGradGuard no_grad;
  for (const auto& [name, average] : saved) {
    torch::Tensor* p = params.find(name);
    UT_CHECK_TRAIN(p != nullptr && p->sizes() == average.sizes(), "the checkpoint's ", kEmaEntry,
                   " does not match the model at parameter ", name);
    p->copy_(average);
  }
  return true;
}

void register_ema_callback() {
  register_callback<Ema, EmaOptions>(
      "ema", "exponential moving average of the weights, used for validation, saved");
}

}  // namespace unitrain
