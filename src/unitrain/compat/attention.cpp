#include "unitrain/compat/attention.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <limits>

namespace unitrain {

#if TORCH_VERSION_MAJOR >= 2

torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, double dropout) {
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, dropout, /*is_causal=*/true);
}

torch::Tensor masked_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& allowed,
                               double dropout) {
  return at::scaled_dot_product_attention(q, k, v, allowed, dropout, /*is_causal=*/false);
}

#else

torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, double dropout) {
  const int64_t t = q.size(-2);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  auto future = torch::ones({t, t}, q.options().dtype(torch::kBool)).triu(1);
  scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  if (dropout > 0) weights = torch::dropout(weights, dropout, /*train=*/true);
  return torch::matmul(weights, v);
}

torch::Tensor masked_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& allowed,
                               double dropout) {
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  scores = scores.masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  if (dropout > 0) weights = torch::dropout(weights, dropout, /*train=*/true);
  return torch::matmul(weights, v);
}

#endif

}  // namespace unitrain
