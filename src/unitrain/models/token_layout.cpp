#include "unitrain/models/token_layout.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>

#include "unitrain/compat/attention.h"
#include "unitrain/core/error.h"
#include "unitrain/models/model_checks.h"

namespace unitrain::models {

std::pair<torch::Tensor, torch::Tensor> KvCache::extend(size_t block, const torch::Tensor& k,
                                                        const torch::Tensor& v) {
  if (keys.size() <= block) {
    keys.resize(block + 1);
    values.resize(block + 1);
  }
  const int64_t need = length + k.size(2);
  torch::Tensor& kb = keys[block];
  torch::Tensor& vb = values[block];
  if (!kb.defined() || kb.size(2) < need) {
    // Room for twice as many: a token's extend copies only its own keys and values (amortised),
    // not the whole cache as a concatenation would.
    const int64_t room = std::max<int64_t>(need, kb.defined() ? 2 * kb.size(2) : 64);
    auto grown_k = torch::empty({k.size(0), k.size(1), room, k.size(3)}, k.options());
    auto grown_v = torch::empty({v.size(0), v.size(1), room, v.size(3)}, v.options());
    if (kb.defined()) {
      grown_k.narrow(2, 0, length).copy_(kb.narrow(2, 0, length));
      grown_v.narrow(2, 0, length).copy_(vb.narrow(2, 0, length));
    }
    kb = grown_k;
    vb = grown_v;
  }
  kb.narrow(2, length, k.size(2)).copy_(k);
  vb.narrow(2, length, v.size(2)).copy_(v);
  return {kb.narrow(2, 0, need), vb.narrow(2, 0, need)};
}

TokenLayout TokenLayout::causal(int64_t t, const torch::Device& device) {
  TokenLayout l;
  l.positions = torch::arange(t, torch::TensorOptions().dtype(torch::kLong).device(device));
  return l;
}

TokenLayout TokenLayout::packed(const torch::Tensor& segments, const torch::Tensor& tokens,
                                const char* model) {
  UT_CHECK(segments.dim() == 2 && !segments.is_floating_point() && !segments.is_complex() &&
               segments.sizes() == tokens.sizes(),
           model,
           ": the segment ids (the second of objective.inputs) must be integers of the "
           "token ids' shape ",
           shape_string(tokens), ", got ", segments.scalar_type(), " of shape ",
           shape_string(segments));
  auto seg = segments.to(torch::kLong);
  const int64_t t = seg.size(1);
  auto index = torch::arange(t, seg.options()).expand_as(seg);
  // A token starts an example where its id differs from the one before it.
  auto starts = torch::ones_like(seg, torch::kBool);
  if (t > 1) starts.narrow(1, 1, t - 1).copy_(seg.narrow(1, 1, t - 1) != seg.narrow(1, 0, t - 1));
  auto first = std::get<0>(torch::where(starts, index, torch::zeros_like(index)).cummax(1));
  TokenLayout l;
  l.positions = index - first;
  auto same = seg.unsqueeze(2) == seg.unsqueeze(1);  // [B, T, T]
  auto earlier = torch::ones({t, t}, seg.options().dtype(torch::kBool)).tril();
  l.allowed = same.logical_and(earlier).unsqueeze(1);
  return l;
}

TokenLayout TokenLayout::cached(int64_t t, KvCache& cache, const torch::Device& device) {
  const auto opts = torch::TensorOptions().dtype(torch::kLong).device(device);
  TokenLayout l;
  const auto index = torch::arange(cache.length, cache.length + t, opts);  // [t]
  const auto keys = torch::arange(cache.length + t, opts);                 // [keys]
  // New token i (at length + i) attends keys 0..length + i.
  l.allowed = keys.unsqueeze(0) <= index.unsqueeze(1);
  l.positions = index;
  l.cache = &cache;
  if (!cache.pads.empty()) {
    const auto pads = torch::tensor(cache.pads, torch::kLong).to(device).view({-1, 1});  // [B, 1]
    l.positions = (index.unsqueeze(0) - pads).clamp_min(0);                              // [B, t]
    const auto real_key = keys.unsqueeze(0) >= pads;              // [B, keys]
    const auto pad_query = index.unsqueeze(0) < pads;             // [B, t]
    const auto itself = keys.unsqueeze(0) == index.unsqueeze(1);  // [t, keys]
    l.allowed = torch::where(pad_query.unsqueeze(2), itself.unsqueeze(0),
                             l.allowed.unsqueeze(0).logical_and(real_key.unsqueeze(1)))
                    .unsqueeze(1);  // [B, 1, t, keys]
  }
  return l;
}

void TokenLayout::limit_window(int64_t window, int64_t t, const torch::Device& device) {
  const int64_t before = cache != nullptr ? cache->length : 0;  // the keys cached before
  const int64_t keys = before + t;
  if (window <= 0 || window >= keys) return;  // every key is within the window
  const auto opts = torch::TensorOptions().dtype(torch::kLong).device(device);
  const auto q = torch::arange(before, keys, opts).unsqueeze(1);  // [t, 1]
  const auto k = torch::arange(keys, opts).unsqueeze(0);          // [1, keys]
  const auto near = (q - k) < window;
  allowed = allowed.defined() ? allowed.logical_and(near) : near.logical_and(k <= q);
}

torch::Tensor TokenLayout::attend(const torch::Tensor& q, const torch::Tensor& k,
                                  const torch::Tensor& v, double dropout) const {
  if (!allowed.defined()) return causal_attention(q, k, v, dropout);
  return masked_attention(q, k, v, allowed, dropout);
}

torch::Tensor TokenLayout::attend_eager(const torch::Tensor& q, const torch::Tensor& k,
                                        const torch::Tensor& v, double dropout, double scale,
                                        double softcap) const {
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * scale;
  if (softcap > 0) scores = torch::tanh(scores / softcap) * softcap;
  const int64_t t = q.size(2), keys = k.size(2);
  const torch::Tensor ok =
      allowed.defined() ? allowed
                        : torch::ones({t, keys}, q.options().dtype(torch::kBool)).tril(keys - t);
  scores = scores.masked_fill(ok.logical_not(), -std::numeric_limits<float>::infinity());
  auto weights = torch::softmax(scores, -1, torch::kFloat).to(q.scalar_type());
  if (dropout > 0) weights = torch::dropout(weights, dropout, /*train=*/true);
  return torch::matmul(weights, v);
}

}  // namespace unitrain::models
