#include "unitrain/parallel/shard_ordered_metrics.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cstdlib>
#include <sstream>

#include "unitrain/core/error.h"
#include "unitrain/metrics/metric_accumulator.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {
namespace {

/// One batch's entry as it travels: name, exp_of_mean, value and weight (exact: hexadecimal).
struct Entry {
  std::string name;
  bool exp_of_mean;
  double value;
  double weight;
};
using Batches = std::vector<std::vector<Entry>>;

/// "<batches>\n" then per batch "<entries>\n" and per entry "name\texp\tvalue\tweight\n".
std::string encode(const Batches& batches) {
  std::string out = fmt::format("{}\n", batches.size());
  for (const auto& batch : batches) {
    out += fmt::format("{}\n", batch.size());
    for (const Entry& e : batch) {
      out += fmt::format("{}\t{}\t{:a}\t{:a}\n", e.name, e.exp_of_mean ? 1 : 0, e.value, e.weight);
    }
  }
  return out;
}

Batches decode(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  Batches out(std::stoul(line));
  for (auto& batch : out) {
    std::getline(in, line);
    batch.resize(std::stoul(line));
    for (Entry& e : batch) {
      std::getline(in, line);
      const size_t a = line.rfind('\t'), b = line.rfind('\t', a - 1), c = line.rfind('\t', b - 1);
      e.name = line.substr(0, c);
      e.exp_of_mean = line[c + 1] == '1';
      e.value = std::strtod(line.c_str() + b + 1, nullptr);
      e.weight = std::strtod(line.c_str() + a + 1, nullptr);
    }
  }
  return out;
}

}  // namespace

void ShardOrderedMetrics::add(const std::map<std::string, MetricValue>& values,
                              int64_t batch_size) {
  std::map<std::string, Value>& batch = batches_.emplace_back();
  for (const auto& [name, v] : values) {
    UT_CHECK_TRAIN(v.value.defined() && v.value.numel() == 1, "metric '", name,
                   "' must be a scalar tensor");
    batch[name] = {v.value.detach().reshape({}).to(torch::kFloat64),
                   v.weight < 0 ? double(batch_size) : v.weight, v.exp_of_mean};
  }
}

void ShardOrderedMetrics::fold(ProcessGroup* group, MetricAccumulator& into) {
  Batches mine(batches_.size());
  std::vector<torch::Tensor> values;
  for (const auto& batch : batches_) {
    for (const auto& [name, v] : batch) values.push_back(v.value.to(torch::kCPU));
  }
  const torch::Tensor host = values.empty() ? torch::Tensor() : torch::stack(values);
  size_t i = 0;
  for (size_t b = 0; b < batches_.size(); ++b) {
    for (const auto& [name, v] : batches_[b]) {
      mine[b].push_back({name, v.exp_of_mean, host.data_ptr<double>()[i++], v.weight});
    }
  }
  batches_.clear();
  std::vector<Batches> ranks;
  if (group) {
    for (const std::string& text : group->all_gather(encode(mine))) ranks.push_back(decode(text));
  } else {
    ranks.push_back(std::move(mine));
  }
  size_t most = 0;
  for (const auto& r : ranks) most = std::max(most, r.size());
  for (size_t k = 0; k < most; ++k) {  // global batch k x W + q: rank q's k-th
    for (const auto& r : ranks) {
      if (k >= r.size()) continue;
      for (const Entry& e : r[k]) {
        MetricAccumulator::Sum& sum = into.sums()[e.name];
        sum.exp_of_mean = e.exp_of_mean;
        if (e.weight == 0) continue;  // nothing counted (every token ignored)
        sum.weight += e.weight;
        sum.weighted += e.value * e.weight;
      }
    }
  }
}

}  // namespace unitrain
