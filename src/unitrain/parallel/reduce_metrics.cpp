#include "unitrain/parallel/reduce_metrics.h"

#include <torch/torch.h>

#include <map>
#include <sstream>

namespace unitrain {

void all_reduce_metrics(ProcessGroup& group, MetricAccumulator& sums) {
  // The union of names (with how each is averaged), in one order on every rank.
  std::string mine;
  for (const auto& [name, s] : sums.sums())
    mine += name + "\t" + (s.exp_of_mean ? "1" : "0") + "\n";
  std::map<std::string, bool> names;
  for (const std::string& text : group.all_gather(mine)) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      const size_t tab = line.rfind('\t');
      names[line.substr(0, tab)] = line.substr(tab + 1) == "1";
    }
  }
  torch::Tensor values = torch::zeros({static_cast<int64_t>(2 * names.size())}, torch::kFloat64);
  double* v = values.data_ptr<double>();
  size_t i = 0;
  for (const auto& [name, exp] : names) {
    auto it = sums.sums().find(name);
    if (it != sums.sums().end()) {
      v[2 * i] = it->second.weighted;
      v[2 * i + 1] = it->second.weight;
    }
    ++i;
  }
  std::vector<torch::Tensor> t{values};
  group.all_reduce_sum(t);
  i = 0;
  for (const auto& [name, exp] : names) {
    MetricAccumulator::Sum& s = sums.sums()[name];
    s.weighted = v[2 * i];
    s.weight = v[2 * i + 1];
    s.exp_of_mean = exp;
    ++i;
  }
}

}  // namespace unitrain
