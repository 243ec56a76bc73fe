#include "unitrain/commands/class_results.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "unitrain/data/loader.h"
#include "unitrain/engine/setup/run_device.h"
#include "unitrain/objective/model_outputs.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {

std::vector<std::string> ClassResults::lines() const {
  std::vector<std::string> out;
  for (size_t c = 0; c < labels.size(); ++c) {
    const double share = examples[c] ? 100.0 * correct[c] / examples[c] : 0.0;
    out.push_back(
        fmt::format("{}: {} of {} right ({:.1f}%)", labels[c], correct[c], examples[c], share));
  }
  return out;
}

std::string ClassResults::json() const {
  nlohmann::json out;
  out["per_class"] = nlohmann::json::object();
  for (size_t c = 0; c < labels.size(); ++c) {
    out["per_class"][labels[c]] = {
        {"examples", examples[c]},
        {"correct", correct[c]},
        {"accuracy", examples[c] ? static_cast<double>(correct[c]) / examples[c] : 0.0}};
  }
  out["confusion"] = {{"labels", labels}, {"counts", confusion}};
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<ClassResults> class_results(ObjectiveModule& module, const Loader& loader,
                                          const std::vector<std::string>& names) {
  torch::NoGradGuard no_grad;
  const bool was_training = module.is_training();
  module.eval();
  ModelOutputs outputs("model '" + module.model_type() + "'", "objective", module.inputs(),
                       module.predictions());
  const torch::Device device = device_of(module.weights());
  torch::Tensor confusion;  // [C, C] int64 on the CPU, made at the first batch
  auto it = loader.epoch(0);
  while (auto batch = it->next()) {
    if (!batch->has("y")) break;
    const torch::Tensor y = batch->at("y");
    const Batch there = device.is_cpu() ? *batch : batch->to(device);
    const torch::Tensor scores = outputs.run(*module.model(), there).at(0);
    if (scores.dim() != 2 || y.dim() != 1 || y.scalar_type() != torch::kInt64 ||
        scores.size(0) != y.size(0)) {
      break;
    }
    const int64_t classes = scores.size(1);
    if (!confusion.defined()) confusion = torch::zeros({classes, classes}, torch::kInt64);
    if (confusion.size(0) != classes ||
        (y.numel() && (y.min().item<int64_t>() < 0 || y.max().item<int64_t>() >= classes))) {
      confusion = torch::Tensor();
      break;
    }
    const torch::Tensor predicted = scores.argmax(1).to(torch::kCPU);
    confusion.view(-1).index_add_(0, y * classes + predicted, torch::ones_like(y));
  }
  module.train(was_training);
  if (!confusion.defined()) return std::nullopt;
  const int64_t classes = confusion.size(0);
  ClassResults r;
  const auto counts = confusion.accessor<int64_t, 2>();
  for (int64_t t = 0; t < classes; ++t) {
    r.labels.push_back(static_cast<int64_t>(names.size()) == classes ? names[t]
                                                                     : std::to_string(t));
    std::vector<int64_t> row(counts[t].data(), counts[t].data() + classes);
    int64_t total = 0;
    for (int64_t v : row) total += v;
    r.examples.push_back(total);
    r.correct.push_back(row[t]);
    r.confusion.push_back(std::move(row));
  }
  return r;
}

}  // namespace unitrain
