// The parallel layers of tensor_parallel.h (column- and row-parallel Linear, the vocabulary-
// parallel Embedding and cross entropy), what finds and draws their cuts in a module
// (splits_of, cut_whole, init_normal) and the attention over a cut layer's heads; the
// collectives, the cuts of one tensor and the chunks' helpers they use are in
// tensor_parallel.cpp.
#include <torch/torch.h>

#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/tensor_chunks.h"
#include "unitrain/parallel/tensor_parallel.h"

namespace unitrain {
namespace tp {

namespace {

/// A parameter a parallel layer cuts: its name in the module, the tensor, how, and the
/// layer's place in its group.
struct LayerCut {
  std::string name;
  torch::Tensor param;
  Split split;
  int part = 0, parts = 1;
};

/// Every parameter `module`'s parallel layers cut, in named_modules() order.
std::vector<LayerCut> layer_cuts(const torch::nn::Module& module) {
  std::vector<LayerCut> out;
  // A LoRA adapter's matrix on a parallel layer (model.lora: lora_A, lora_B), cut with it.
  auto adapter = [&out](const torch::nn::Module& m, const std::string& prefix, const char* child,
                        const Split& split, int part, int parts) {
    const auto children = m.named_children();
    const auto* a = children.find(child);
    if (a == nullptr) return;
    const auto params = (*a)->named_parameters(/*recurse=*/false);
    const auto* w = params.find("weight");
    if (w != nullptr) out.push_back({prefix + child + ".weight", *w, split, part, parts});
  };
  auto add = [&out, &adapter](const torch::nn::Module& m, const std::string& prefix) {
    if (const auto* c = m.as<ColumnParallelLinearImpl>()) {
      out.push_back({prefix + "weight", c->weight, c->split(), c->part(), c->parts()});
      if (c->bias.defined()) {
        out.push_back({prefix + "bias", c->bias, c->bias_split(), c->part(), c->parts()});
      }
      adapter(m, prefix, "lora_B", c->bias_split(), c->part(), c->parts());  // [out, r]
    } else if (const auto* r = m.as<RowParallelLinearImpl>()) {
      out.push_back({prefix + "weight", r->weight, r->split(), r->part(), r->parts()});
      adapter(m, prefix, "lora_A", Split{1, 1, r->split().whole}, r->part(), r->parts());
    } else if (const auto* e = m.as<VocabParallelEmbeddingImpl>()) {
      out.push_back({prefix + "weight", e->weight, e->split(), e->part(), e->parts()});
    }
  };
  add(module, "");
  for (const auto& m : module.named_modules("", /*include_self=*/false)) {
    add(*m.value(), m.key() + ".");
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, Split>> splits_of(const torch::nn::Module& module) {
  std::vector<std::pair<std::string, Split>> out;
  for (LayerCut& c : layer_cuts(module)) out.emplace_back(std::move(c.name), c.split);
  return out;
}

void cut_whole(const torch::nn::Module& module,
               std::vector<std::pair<std::string, torch::Tensor>>& named) {
  std::unordered_map<std::string, LayerCut> cuts;
  for (LayerCut& c : layer_cuts(module)) cuts.emplace(c.name, std::move(c));
  for (auto& [name, t] : named) {
    const auto it = cuts.find(name);
    if (it == cuts.end()) continue;
    const LayerCut& c = it->second;
    const int64_t dim = c.split.dim;
    if (t.dim() != c.param.dim() || t.size(dim) != whole_size(c.split, c.param.size(dim), c.parts))
      continue;
    t = part_of(t, dim, c.part, c.parts, c.split.blocks);
  }
}

bool init_normal(torch::nn::Module& layer, double std) {
  torch::NoGradGuard no_grad;
  auto whole = [std](const torch::Tensor& part, const Split& split, int parts) {
    std::vector<int64_t> shape(part.sizes().begin(), part.sizes().end());
    shape[size_t(split.dim)] = whole_size(split, part.size(split.dim), parts);
    return torch::empty(shape, part.options()).normal_(0.0, std);
  };
  if (auto* c = layer.as<ColumnParallelLinearImpl>()) {
    const Split split = c->split();
    const torch::Tensor w = whole(c->weight, split, c->parts());
    c->load_full(w, c->bias.defined() ? torch::zeros({w.size(split.dim)}) : torch::Tensor());
  } else if (auto* r = layer.as<RowParallelLinearImpl>()) {
    r->load_full(whole(r->weight, r->split(), r->parts()),
                 r->bias.defined() ? torch::zeros_like(r->bias) : torch::Tensor());
  } else if (auto* e = layer.as<VocabParallelEmbeddingImpl>()) {
    e->load_full(whole(e->weight, e->split(), e->parts()));  // its padding row zeroed there
  } else {
    return false;
  }
  return true;
}

torch::Tensor attend_heads(
    const ColumnParallelLinearImpl* layer, const std::vector<torch::Tensor>& qkv, bool draws,
    const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& attend) {
  const int64_t chunks = layer ? layer->chunks() : 0;
  std::optional<PartDraws> streams;
  if (layer && draws) {  // chunked: chunk c of C's stream; else the part's
    const int64_t k = std::max<int64_t>(chunks, 1);
    streams.emplace(static_cast<int>(layer->part() * k), static_cast<int>(layer->parts() * k),
                    qkv[0].device());
  }
  int64_t chunk = 0;
  return chunkwise(qkv, 1, chunks, [&](const std::vector<torch::Tensor>& in) {
    if (streams && chunks > 0) streams->enter(static_cast<int>(layer->part() * chunks + chunk++));
    return attend(in);
  });
}

}  // namespace tp

namespace {

/// `n` must be divisible by the group's size: ConfigError naming the layer otherwise.
int64_t per_process(int64_t n, const ProcessGroup* group, const char* layer, const char* what) {
  const int t = tp::size_of(group);
  UT_CHECK(n % t == 0, layer, ": its ", what, " (", n, ") is not divisible by the ", t,
           " processes of its tensor group (distributed.tensor_parallel)");
  return n / t;
}

/// This process's rows of `n` cut as evenly as they go (tp::part_range): ConfigError naming the
/// layer when a process would get none.
int64_t uneven_part(int64_t n, const ProcessGroup* group, const char* layer, const char* what) {
  const int t = tp::size_of(group);
  const int64_t chunk = (n + t - 1) / t;
  UT_CHECK(n > int64_t(t - 1) * chunk, layer, ": its ", what, " (", n, ") leaves a process of the ",
           t, " of its tensor group (distributed.tensor_parallel) no rows; use a smaller T");
  return tp::part_range(n, tp::rank_of(group), t).second;
}

/// This process's chunks of a layer built in a chunked tp::BuildScope (0: not chunked):
/// C / T, ConfigError naming the layer when T does not divide C or C does not divide `n`
/// (the size the chunks cut).
int64_t chunks_here(int64_t n, const ProcessGroup* group, const char* layer, const char* what) {
  const int64_t c = tp::building_chunks();
  if (c == 0) return 0;
  const int t = tp::size_of(group);
  UT_CHECK(c % t == 0, "distributed.reproducible_chunks: ", c, " is not divisible by the ", t,
           " processes of a tensor group (distributed.tensor_parallel); use a multiple of it");
  UT_CHECK(n % c == 0, layer, ": its ", what, " (", n, ") is not divisible into the ", c,
           " chunks of distributed.reproducible_chunks; use a C that divides it");
  return c / t;
}

/// Conv1D's product: x [..., in] W [in, out] (+ b), as Hugging Face computes it (addmm on
/// the rows).
torch::Tensor conv1d_product(const torch::Tensor& x, const torch::Tensor& w,
                             const torch::Tensor& b) {
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.back() = w.size(1);
  const torch::Tensor rows = x.reshape({-1, x.size(-1)});
  const torch::Tensor y = b.defined() ? torch::addmm(b, rows, w) : torch::mm(rows, w);
  return y.view(shape);
}

/// A full Linear(in, out)'s weight and bias, drawn as torch::nn::Linear draws them.
std::pair<torch::Tensor, torch::Tensor> full_linear(int64_t in, int64_t out, bool bias) {
  torch::NoGradGuard no_grad;
  torch::Tensor w = torch::empty({out, in});
  torch::nn::init::kaiming_uniform_(w, std::sqrt(5.0));
  torch::Tensor b;
  if (bias) {
    const double bound = in > 0 ? 1.0 / std::sqrt(double(in)) : 0.0;
    b = torch::empty({out}).uniform_(-bound, bound);
  }
  return {w, b};
}

}  // namespace

ColumnParallelLinearImpl::ColumnParallelLinearImpl(int64_t in, int64_t out, bool with_bias,
                                                   std::shared_ptr<ProcessGroup> group,
                                                   bool gather_output, int64_t blocks, bool in_out)
    : group_(std::move(group)),
      gather_output_(gather_output),
      blocks_(blocks),
      out_(out),
      in_out_(in_out) {
  UT_CHECK(blocks >= 1 && out % blocks == 0, "a column-parallel Linear: its out_features (", out,
           ") is not ", blocks, " equal blocks");
  // One block may be cut unevenly (a vocabulary's head); blocks, or a gathered output, not.
  const int64_t rows =
      blocks == 1 && !gather_output
          ? uneven_part(out, group_.get(), "a column-parallel Linear", "out_features")
          : per_process(out / blocks, group_.get(), "a column-parallel Linear",
                        blocks > 1 ? "out_features per block" : "out_features") *
                blocks;
  chunks_ = chunks_here(out / blocks, group_.get(), "a column-parallel Linear",
                        blocks > 1 ? "out_features per block" : "out_features");
  weight =
      register_parameter("weight", in_out ? torch::empty({in, rows}) : torch::empty({rows, in}));
  if (with_bias) bias = register_parameter("bias", torch::zeros({rows}));
  if (in_out) return;  // Conv1D draws nothing: the model initialises it
  const auto [w, b] = full_linear(in, out, with_bias);
  load_full(w, b);
}

void ColumnParallelLinearImpl::load_full(const torch::Tensor& w, const torch::Tensor& b) {
  torch::NoGradGuard no_grad;
  const int rank = tp::rank_of(group_.get()), t = tp::size_of(group_.get());
  weight.copy_(tp::part_of(w, in_out_ ? 1 : 0, rank, t, blocks_));
  if (bias.defined() && b.defined()) bias.copy_(tp::part_of(b, 0, rank, t, blocks_));
}

torch::Tensor ColumnParallelLinearImpl::chunked_forward(const torch::Tensor& x) {
  const int64_t k = chunks_, dim = in_out_ ? 1 : 0;
  const int64_t m = weight.size(dim) / blocks_ / k;
  // The output dimension as [blocks, k, m]: chunk j is slice j of every block.
  std::vector<int64_t> shape(weight.sizes().begin(), weight.sizes().end());
  shape[size_t(dim)] = m;
  shape.insert(shape.begin() + dim, {blocks_, k});
  const auto w_chunks = weight.view(shape).unbind(dim + 1);
  std::vector<torch::Tensor> b_chunks;
  if (bias.defined()) b_chunks = bias.view({blocks_, k, m}).unbind(1);
  const std::vector<int64_t> w_shape = in_out_ ? std::vector<int64_t>{weight.size(0), blocks_ * m}
                                               : std::vector<int64_t>{blocks_ * m, weight.size(1)};
  const auto xs = tp::fan_out(x, group_, k);
  std::vector<torch::Tensor> ys;
  for (int64_t j = 0; j < k; ++j) {
    const torch::Tensor w = w_chunks[size_t(j)].reshape(w_shape).contiguous();
    const torch::Tensor b =
        bias.defined() ? b_chunks[size_t(j)].reshape({blocks_ * m}).contiguous() : torch::Tensor();
    const torch::Tensor y = in_out_ ? conv1d_product(xs[size_t(j)], w, b)
                                    : torch::nn::functional::linear(xs[size_t(j)], w, b);
    std::vector<int64_t> blocked(y.sizes().begin(), y.sizes().end() - 1);
    blocked.insert(blocked.end(), {blocks_, m});
    ys.push_back(y.view(blocked));
  }
  // [..., k, blocks, m] -> [..., blocks, k, m]: the layout of this process's part.
  std::vector<int64_t> out(x.sizes().begin(), x.sizes().end() - 1);
  out.push_back(blocks_ * k * m);
  return torch::stack(ys, -3).transpose(-3, -2).reshape(out);
}

torch::Tensor ColumnParallelLinearImpl::forward(const torch::Tensor& x) {
  torch::Tensor y;
  if (chunks_ > 0) {
    y = chunked_forward(x);
  } else {
    const torch::Tensor in = tp::copy_to_group(x, group_);
    y = in_out_
            ? conv1d_product(in, weight, bias)
            : torch::nn::functional::linear(in, weight, bias.defined() ? bias : torch::Tensor());
  }
  if (!gather_output_) return y;
  const torch::Tensor joined = tp::gather_last_dim(y, group_);  // [..., T * blocks * m]
  if (blocks_ == 1 || tp::size_of(group_.get()) == 1) return joined;
  // Rank-major [T, blocks, m] to the full layer's block-major [blocks, T, m].
  const int64_t t = tp::size_of(group_.get()), m = y.size(-1) / blocks_;
  std::vector<int64_t> shape(y.sizes().begin(), y.sizes().end() - 1);
  std::vector<int64_t> split_shape = shape;
  split_shape.insert(split_shape.end(), {t, blocks_, m});
  shape.push_back(t * blocks_ * m);
  return joined.view(split_shape).transpose(-3, -2).reshape(shape);
}

RowParallelLinearImpl::RowParallelLinearImpl(int64_t in, int64_t out, bool with_bias,
                                             std::shared_ptr<ProcessGroup> group,
                                             bool input_is_parallel, bool in_out)
    : group_(std::move(group)), input_is_parallel_(input_is_parallel), in_(in), in_out_(in_out) {
  const int64_t cols = per_process(in, group_.get(), "a row-parallel Linear", "in_features");
  chunks_ = chunks_here(in, group_.get(), "a row-parallel Linear", "in_features");
  weight =
      register_parameter("weight", in_out ? torch::empty({cols, out}) : torch::empty({out, cols}));
  if (with_bias) bias = register_parameter("bias", torch::zeros({out}));
  if (in_out) return;  // Conv1D draws nothing: the model initialises it
  const auto [w, b] = full_linear(in, out, with_bias);
  load_full(w, b);
}

void RowParallelLinearImpl::load_full(const torch::Tensor& w, const torch::Tensor& b) {
  torch::NoGradGuard no_grad;
  weight.copy_(
      tp::part_of(w, in_out_ ? 0 : 1, tp::rank_of(group_.get()), tp::size_of(group_.get())));
  if (bias.defined() && b.defined()) bias.copy_(b);
}

torch::Tensor RowParallelLinearImpl::forward(const torch::Tensor& x) {
  const torch::Tensor part = input_is_parallel_ ? x : tp::split_last_dim(x, group_);
  if (chunks_ > 0) {  // C / T partial products of in / C columns, added in chunk order
    const int64_t cols = part.size(-1) / chunks_;
    const auto xs = part.split(cols, -1);
    const auto ws = weight.split(cols, in_out_ ? 0 : 1);
    std::vector<torch::Tensor> products;
    for (size_t j = 0; j < xs.size(); ++j) {
      const torch::Tensor xj = xs[j].contiguous(), wj = ws[j].contiguous();
      products.push_back(in_out_ ? conv1d_product(xj, wj, torch::Tensor())
                                 : torch::nn::functional::linear(xj, wj));
    }
    const torch::Tensor y = tp::in_chunk_order(tp::all_chunks(torch::stack(products), group_));
    return bias.defined() ? y + bias : y;
  }
  const torch::Tensor product = in_out_ ? conv1d_product(part, weight, torch::Tensor())
                                        : torch::nn::functional::linear(part, weight);
  torch::Tensor y = tp::reduce_from_group(product, group_);
  return bias.defined() ? y + bias : y;
}

VocabParallelEmbeddingImpl::VocabParallelEmbeddingImpl(int64_t num_embeddings, int64_t dim,
                                                       std::shared_ptr<ProcessGroup> group,
                                                       int64_t padding_idx)
    : group_(std::move(group)), num_embeddings_(num_embeddings) {
  const int64_t rows =
      uneven_part(num_embeddings, group_.get(), "a vocabulary-parallel Embedding", "vocabulary");
  start_ =
      tp::part_range(num_embeddings, tp::rank_of(group_.get()), tp::size_of(group_.get())).first;
  if (padding_idx >= start_ && padding_idx < start_ + rows) padding_idx_ = padding_idx - start_;
  // Chunked: the lookup adds no two values (one process's row, zeros), the same bits whatever
  // T; only the sizes are checked.
  chunks_ =
      chunks_here(num_embeddings, group_.get(), "a vocabulary-parallel Embedding", "vocabulary");
  weight = register_parameter("weight", torch::empty({rows, dim}));
  torch::NoGradGuard no_grad;
  load_full(torch::empty({num_embeddings, dim}).normal_());  // (the padding row zeroed)
}

void VocabParallelEmbeddingImpl::load_full(const torch::Tensor& table) {
  torch::NoGradGuard no_grad;
  weight.copy_(tp::part_of(table, 0, tp::rank_of(group_.get()), tp::size_of(group_.get())));
  if (padding_idx_ >= 0) weight[padding_idx_].zero_();
}

torch::Tensor VocabParallelEmbeddingImpl::forward(const torch::Tensor& ids) {
  if (tp::size_of(group_.get()) == 1) return torch::embedding(weight, ids, padding_idx_);
  const int64_t rows = weight.size(0);
  const torch::Tensor mine = (ids >= start_) & (ids < start_ + rows);
  const torch::Tensor local = torch::where(mine, ids - start_, torch::zeros_like(ids));
  const torch::Tensor out =
      torch::embedding(weight, local, padding_idx_) * mine.unsqueeze(-1).to(weight.dtype());
  return tp::reduce_from_group(out, group_);
}

torch::Tensor vocab_parallel_cross_entropy(const torch::Tensor& logits,
                                           const torch::Tensor& targets, int64_t vocab_start,
                                           const std::shared_ptr<ProcessGroup>& group,
                                           int64_t ignore_index, int64_t chunks) {
  const torch::Tensor l =
      logits.scalar_type() == torch::kDouble ? logits : logits.to(torch::kFloat32);
  const int64_t rows = l.size(-1);
  torch::Tensor max;
  {
    torch::NoGradGuard no_grad;  // a constant shift: it cancels in the loss and its gradient
    max = std::get<0>(l.max(-1, /*keepdim=*/true));
    if (tp::size_of(group.get()) > 1) {
      std::vector<torch::Tensor> m{max};
      group->all_reduce_max(m);
      max = m[0];
    }
  }
  const torch::Tensor shifted = l - max;
  const torch::Tensor valid = targets != ignore_index;
  const torch::Tensor mine = valid & (targets >= vocab_start) & (targets < vocab_start + rows);
  const torch::Tensor local = torch::where(mine, targets - vocab_start, torch::zeros_like(targets));
  const torch::Tensor picked =
      shifted.gather(-1, local.unsqueeze(-1)).squeeze(-1) * mine.to(shifted.dtype());
  if (chunks > 0) {  // each chunk's sum of exponentials apart, the chunks' added in chunk order
    std::vector<torch::Tensor> each;
    for (const auto& piece : shifted.split(rows / chunks, -1)) {
      each.push_back(piece.contiguous().exp().sum(-1));
    }
    const torch::Tensor total = tp::in_chunk_order(tp::all_chunks(torch::stack(each), group));
    const torch::Tensor target = tp::reduce_from_group(picked, group);  // one process's, zeros
    return (total.log() - target) * valid.to(total.dtype());
  }
  // One all-reduce for both sums: [N, 2].
  const torch::Tensor sums =
      tp::reduce_from_group(torch::stack({shifted.exp().sum(-1), picked}, -1), group);
  const torch::Tensor loss = sums.select(-1, 0).log() - sums.select(-1, 1);
  return loss * valid.to(loss.dtype());
}

}  // namespace unitrain
