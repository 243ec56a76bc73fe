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

/// Attention of `q` ([B, H, Tq, D]) over `k`, `v` ([B, H, Tk, D]) where query i attends key j
/// only where `allowed` (bool, broadcastable to [B, H, Tq, Tk]) is true: a packed batch's
/// block-diagonal causal mask, or a KV cache's new tokens over every earlier one. Each query
/// must be allowed at least one key. Scaled by 1/sqrt(D), dropout as causal_attention's.
torch::Tensor masked_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& allowed,
                               double dropout);

}  // namespace unitrain
