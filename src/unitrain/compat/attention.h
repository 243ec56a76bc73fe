#pragma once
// Causal scaled dot-product attention, whichever LibTorch it is built against: 2.x's fused
// at::scaled_dot_product_attention (flash or memory-efficient kernels on a GPU, a fused kernel on
// the CPU: no [T, T] score matrix kept for backward), 1.x's product, mask and softmax.
#include <torch/types.h>

namespace unitrain {

/// Attention of `q`, `k`, `v` ([B, H, T, D]) where position t attends to positions 0..t only,
/// scaled by 1/sqrt(D), with dropout `dropout` on the attention weights (none when 0) -> [B, H,
/// T, D]. The two paths agree to float rounding; their dropout masks differ.
torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, double dropout);

}  // namespace unitrain
