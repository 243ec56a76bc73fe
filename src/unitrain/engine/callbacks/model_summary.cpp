#include "unitrain/engine/callbacks/model_summary.h"

#include <fmt/format.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <vector>

#include "unitrain/engine/callback_registry.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {
namespace {

struct Row {
  std::string name, type;
  int64_t trainable = 0, frozen = 0, bytes = 0;
};

Row row_of(const std::string& name, const torch::nn::Module& m) {
  Row r{name, m.name()};
  for (const auto& p : m.parameters(/*recurse=*/true)) {
    (p.requires_grad() ? r.trainable : r.frozen) += p.numel();
    r.bytes += p.numel() * static_cast<int64_t>(p.element_size());
  }
  return r;
}

void add_rows(const torch::nn::Module& m, const std::string& prefix, int64_t depth,
              int64_t max_depth, std::vector<Row>& rows) {
  if (depth > max_depth) return;
  for (const auto& child : m.named_children()) {
    const std::string name = prefix.empty() ? child.key() : prefix + "." + child.key();
    rows.push_back(row_of(name, *child.value()));
    add_rows(*child.value(), name, depth + 1, max_depth, rows);
  }
}

// 1234567 -> "1.2 M"
std::string count_text(int64_t n) {
  if (n >= 1000000000) return fmt::format("{:.1f} B", n / 1e9);
  if (n >= 1000000) return fmt::format("{:.1f} M", n / 1e6);
  if (n >= 1000) return fmt::format("{:.1f} K", n / 1e3);
  return std::to_string(n);
}

}  // namespace

void ModelSummaryOptions::declare(Options<ModelSummaryOptions>& o) {
  o.field("max_depth", &ModelSummaryOptions::max_depth)
      .min(1)
      .help("module nesting shown: 1 = the model's direct children");
}

std::string model_summary(const torch::nn::Module& model, int64_t max_depth) {
  std::vector<Row> rows;
  add_rows(model, "", 1, max_depth, rows);
  const Row total = row_of("total", model);
  size_t name_w = 6, type_w = 4;
  for (const Row& r : rows) {
    name_w = std::max(name_w, r.name.size());
    type_w = std::max(type_w, r.type.size());
  }
  std::string out = fmt::format("  {:<{}}  {:<{}}  {:>10}  {:>10}  {:>10}\n", "module", name_w,
                                "type", type_w, "params", "trainable", "frozen");
  for (const Row& r : rows) {
    out += fmt::format("  {:<{}}  {:<{}}  {:>10}  {:>10}  {:>10}\n", r.name, name_w, r.type, type_w,
                       count_text(r.trainable + r.frozen), count_text(r.trainable),
                       count_text(r.frozen));
  }
  const double kb = total.bytes / 1024.0;
  out += fmt::format(
      "{} parameters: {} trainable, {} frozen; {}", total.trainable + total.frozen, total.trainable,
      total.frozen, kb < 1024 ? fmt::format("{:.1f} KB", kb) : fmt::format("{:.1f} MB", kb / 1024));
  return out;
}

void ModelSummary::on_fit_start(Trainer& trainer) {
  if (trainer.rank() != 0) return;
  trainer.print("model summary (" + trainer.module()->weights().name() + "):\n" +
                model_summary(trainer.module()->weights(), options_.max_depth));
}

void register_model_summary_callback() {
  register_callback<ModelSummary, ModelSummaryOptions>(
      "model_summary", "log parameters per module, trainable and frozen, at the start");
}

}  // namespace unitrain
