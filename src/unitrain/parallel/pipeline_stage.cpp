#include "unitrain/parallel/pipeline_stage.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "unitrain/core/error.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {
namespace {

/// Adds the seconds it lives to `total`.
class Waiting {
 public:
  explicit Waiting(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~Waiting() {
    total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
};

constexpr int kMaxDims = 8;  // an activation's dimensions a header carries
// A micro-batch's messages: its header, its activation, its gradient.
constexpr int kTagsPerMicro = 4;  // activation header, activation, gradient, draws

}  // namespace

std::vector<size_t> balanced_stage_starts(const std::vector<double>& costs, int stages) {
  const size_t n = costs.size(), p = static_cast<size_t>(stages);
  UT_CHECK(n >= p, "distributed.pipeline_parallel: ", stages, " stages, but the model runs ", n,
           " unit", n == 1 ? "" : "s",
           " one after another (its embeddings, each block, its head): each stage needs one; "
           "use at most ",
           n, " stages");
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][i]: the least largest cost of units [0, i) cut into k stages; from[k][i]: where
  // the k-th stage starts.
  std::vector<std::vector<double>> best(p + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<size_t>> from(p + 1, std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  for (size_t k = 1; k <= p; ++k) {
    for (size_t i = k; i <= n; ++i) {
      for (size_t j = k - 1; j < i; ++j) {
        const double c = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (c < best[k][i]) {
          best[k][i] = c;
          from[k][i] = j;
        }
      }
    }
  }
  std::vector<size_t> starts(p);
  for (size_t k = p, i = n; k > 0; --k) {
    starts[k - 1] = from[k][i];
    i = from[k][i];
  }
  return starts;
}

std::vector<size_t> named_stage_starts(const std::vector<int64_t>& cuts, size_t units, int stages) {
  UT_CHECK(cuts.size() + 1 == static_cast<size_t>(stages),
           "distributed.pipeline_cuts: ", cuts.size(), " cut", cuts.size() == 1 ? "" : "s",
           " for distributed.pipeline_parallel: ", stages, " stages; give ", stages - 1,
           " (the first unit of each stage after the first), or none to balance them");
  std::vector<size_t> starts{0};
  for (size_t i = 0; i < cuts.size(); ++i) {
    UT_CHECK(cuts[i] > static_cast<int64_t>(starts.back()) && cuts[i] < static_cast<int64_t>(units),
             "distributed.pipeline_cuts.", i, ": ", cuts[i],
             " is not a unit after the previous cut (", starts.back(),
             ") and before the model's last (", units - 1,
             "): the cuts name the first unit of each stage, increasing (units count the "
             "embeddings as 0, each block, then the head)");
    starts.push_back(static_cast<size_t>(cuts[i]));
  }
  return starts;
}

PipelineStage::PipelineStage(std::shared_ptr<ProcessGroup> group, std::vector<size_t> starts,
                             size_t units)
    : group_(std::move(group)),
      starts_(std::move(starts)),
      stage_(group_->world_size() - 1 - group_->rank()),
      stages_(group_->world_size()) {
  TORCH_INTERNAL_ASSERT(starts_.size() == static_cast<size_t>(stages_));
  first_ = starts_[static_cast<size_t>(stage_)];
  end_ = last() ? units : starts_[static_cast<size_t>(stage_) + 1];
}

int PipelineStage::stage_of(size_t unit) const {
  return static_cast<int>(std::upper_bound(starts_.begin(), starts_.end(), unit) -
                          starts_.begin()) -
         1;
}

torch::Tensor PipelineStage::receive_activation(int micro, const torch::Device& device) {
  Waiting waiting(waited_);
  torch::Tensor header = torch::empty({2 + kMaxDims}, torch::kLong);
  const int from = rank_of(stage_ - 1);
  group_->recv(header, from, micro * kTagsPerMicro);
  const int64_t* h = header.data_ptr<int64_t>();
  const auto dims = static_cast<size_t>(h[1]);
  UT_CHECK_TRAIN(dims <= static_cast<size_t>(kMaxDims), "pipeline stage ", stage_,
                 ": the previous stage sent an activation of ", dims, " dimensions");
  std::vector<int64_t> shape(h + 2, h + 2 + dims);
  torch::Tensor x =
      torch::empty(shape, torch::TensorOptions(static_cast<c10::ScalarType>(h[0])).device(device));
  group_->recv(x, from, micro * kTagsPerMicro + 1);
  return x;
}

void PipelineStage::send_activation(const torch::Tensor& out, int micro) {
  UT_CHECK_TRAIN(out.dim() <= kMaxDims, "pipeline stage ", stage_, ": an output of ", out.dim(),
                 " dimensions; a stage passes at most ", kMaxDims);
  torch::Tensor header = torch::zeros({2 + kMaxDims}, torch::kLong);
  int64_t* h = header.data_ptr<int64_t>();
  h[0] = static_cast<int64_t>(out.scalar_type());
  h[1] = out.dim();
  for (int64_t d = 0; d < out.dim(); ++d) h[2 + d] = out.size(d);
  const int to = rank_of(stage_ + 1);
  sends_.push_back(group_->start_send(header, to, micro * kTagsPerMicro));
  sends_.push_back(group_->start_send(out.detach(), to, micro * kTagsPerMicro + 1));
}

torch::Tensor PipelineStage::receive_gradient(const torch::Tensor& out, int micro) {
  Waiting waiting(waited_);
  torch::Tensor grad = torch::empty_like(out, torch::MemoryFormat::Contiguous);
  group_->recv(grad, rank_of(stage_ + 1), micro * kTagsPerMicro + 2);
  return grad;
}

void PipelineStage::send_gradient(const torch::Tensor& grad, int micro) {
  sends_.push_back(group_->start_send(grad, rank_of(stage_ - 1), micro * kTagsPerMicro + 2));
}

void PipelineStage::send_draws(const torch::Tensor& state, int micro) {
  sends_.push_back(group_->start_send(state.to(group_->device()), rank_of(stage_ + 1),
                                      micro * kTagsPerMicro + 3));
}

torch::Tensor PipelineStage::receive_draws(const torch::Tensor& like, int micro) {
  Waiting waiting(waited_);
  torch::Tensor state = torch::empty_like(like, torch::TensorOptions().device(group_->device()));
  group_->recv(state, rank_of(stage_ - 1), micro * kTagsPerMicro + 3);
  return state.cpu();
}

void PipelineStage::wait_sends() {
  Waiting waiting(waited_);
  for (auto& wait : sends_) wait();
  sends_.clear();
}

}  // namespace unitrain
