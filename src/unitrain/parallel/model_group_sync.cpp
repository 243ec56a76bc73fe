#include "unitrain/parallel/model_group_sync.h"

#include <torch/torch.h>

#include <cmath>

#include "unitrain/parallel/process_group.h"

namespace unitrain {

ModelGroupSync::ModelGroupSync(std::unique_ptr<GradientSync> inner,
                               std::shared_ptr<ProcessGroup> group, std::vector<torch::Tensor> cut)
    : inner_(std::move(inner)), group_(std::move(group)) {
  for (const auto& p : cut) cut_.insert(p.unsafeGetTensorImpl());
}

ModelGroupSync::ModelGroupSync(std::unique_ptr<GradientSync> inner,
                               std::shared_ptr<ProcessGroup> group)
    : inner_(std::move(inner)), group_(std::move(group)), all_parts_(true) {}

void ModelGroupSync::add_shared(const torch::Tensor& param, std::shared_ptr<ProcessGroup> pair,
                                bool counted_here) {
  shared_.push_back({param, std::move(pair)});
  if (!counted_here) count_elsewhere(param);
}

void ModelGroupSync::finish(const std::vector<torch::Tensor>& params) {
  inner_->finish(params);
  for (Shared& s : shared_) {  // each side's part of the gradient, summed on both
    torch::Tensor& grad = s.param.mutable_grad();
    if (!grad.defined()) grad = torch::zeros_like(s.param);
    std::vector<torch::Tensor> one{grad};
    s.pair->all_reduce_sum(one);
  }
  params_ = params;
  join_decisions();
}

void ModelGroupSync::share(const StepDecision& mine, const torch::Tensor& nonfinite) {
  inner_->share(mine, nonfinite);
}

void ModelGroupSync::agree() {
  inner_->agree();
  join_decisions();
}

void ModelGroupSync::join_decisions() {
  const auto encoded = inner_->agreed().encode();
  torch::Tensor t = torch::tensor(std::vector<float>(encoded.begin(), encoded.end()));
  std::vector<torch::Tensor> one{t};
  group_->all_reduce_max(one);
  agreed_ = StepDecision::decode(one[0].data_ptr<float>());
}

double ModelGroupSync::sum_across_ranks(double local) {
  return group_->sum_of(inner_->sum_across_ranks(local));
}

double ModelGroupSync::norm() {
  if (inner_norm_is_whole_) return inner_->norm();
  if (inner_->measures_norm()) {  // a stage's tensor group: its norm, a part of the model's
    const double inner = inner_->norm();
    return std::sqrt(group_->sum_of(inner * inner));
  }
  // The gradients of `params` are final and equal over the replicas (finish()); under ZeRO 2
  // each replica holds those it owns alone (the others' undefined here), summed over them.
  std::vector<torch::Tensor> parts, wholes;
  for (const auto& p : params_) {
    if (!p.grad().defined() || counted_elsewhere_.count(p.unsafeGetTensorImpl())) continue;
    (all_parts_ || cut_.count(p.unsafeGetTensorImpl()) ? parts : wholes).push_back(p.grad());
  }
  auto squares = [](const std::vector<torch::Tensor>& grads) {
    if (grads.empty()) return torch::zeros({}, torch::kFloat64);
    std::vector<torch::Tensor> norms;
    for (const auto& g : grads) norms.push_back(g.norm().to(torch::kFloat64).cpu());
    return torch::stack(norms).square().sum();
  };
  double part = squares(parts).item<double>(), whole = squares(wholes).item<double>();
  if (inner_->gradients_partitioned()) {
    part = inner_->sum_across_ranks(part);
    whole = inner_->sum_across_ranks(whole);
  }
  return std::sqrt(group_->sum_of(part) + whole);
}

}  // namespace unitrain
