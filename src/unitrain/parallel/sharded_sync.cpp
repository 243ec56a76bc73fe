#include "unitrain/parallel/sharded_sync.h"

#include <torch/torch.h>

#include "unitrain/parallel/process_group.h"

namespace unitrain {

ShardedSync::ShardedSync(std::shared_ptr<ProcessGroup> group) : group_(std::move(group)) {}

void ShardedSync::share(const StepDecision& mine, const torch::Tensor& nonfinite_on_device) {
  mine_ = mine.encode();
  nonfinite_flag_ = nonfinite_on_device;
}

void ShardedSync::agree() {
  torch::Tensor slots = torch::from_blob(mine_.data(), {StepDecision::kSlots}).clone();
  if (nonfinite_flag_.defined()) {  // joins the non-finite slot without a host read before
    slots = slots.to(nonfinite_flag_.device());
    slots[0].add_(nonfinite_flag_.to(torch::kFloat32));
  }
  std::vector<torch::Tensor> t{slots};
  group_->all_reduce_sum(t);
  const torch::Tensor host = t[0].to(torch::kCPU).contiguous();  // the one host read
  std::copy(host.data_ptr<float>(), host.data_ptr<float>() + StepDecision::kSlots, agreed_.begin());
  mine_.fill(0.f);
  nonfinite_flag_ = torch::Tensor();
  if (loss_) loss_->agree(group_.get());
}

StepDecision ShardedSync::agreed() const {
  const StepDecision d = StepDecision::decode(agreed_.data());
  return loss_ ? loss_->applied_to(d) : d;
}

double ShardedSync::sum_across_ranks(double local) { return group_->sum_of(local); }

}  // namespace unitrain
