#include "unitrain/parallel/tensor_parallel.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>

#include "unitrain/core/error.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/tensor_chunks.h"

namespace unitrain {
namespace tp {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// The group a collective's backward needs, kept in its autograd context.
struct GroupHolder : torch::CustomClassHolder {
  std::shared_ptr<ProcessGroup> group;
};

c10::IValue hold(const std::shared_ptr<ProcessGroup>& group) {
  auto holder = c10::make_intrusive<GroupHolder>();
  holder->group = group;
  return c10::IValue::make_capsule(std::move(holder));
}

const std::shared_ptr<ProcessGroup>& held(AutogradContext* ctx) {
  return static_cast<GroupHolder*>(ctx->saved_data["group"].toCapsule().get())->group;
}

torch::Tensor summed(const torch::Tensor& x, ProcessGroup& group) {
  std::vector<torch::Tensor> t{x.contiguous().clone()};
  group.all_reduce_sum(t);
  return t[0];
}

/// Every process's x [..., n] joined into [..., T * n].
torch::Tensor gathered(const torch::Tensor& x, ProcessGroup& group) {
  const int64_t t = group.world_size();
  const torch::Tensor part = x.contiguous();
  torch::Tensor full = torch::empty({t * part.numel()}, part.options());
  group.all_gather_shards(full, part.view({-1}));
  std::vector<int64_t> shape{t};
  for (int64_t d : part.sizes()) shape.push_back(d);
  // [T, ..., n] -> [..., T, n] -> [..., T * n]
  std::vector<int64_t> joined(part.sizes().begin(), part.sizes().end());
  joined.back() *= t;
  return full.view(shape).movedim(0, -2).reshape(joined);
}

torch::Tensor own_part(const torch::Tensor& x, ProcessGroup& group) {
  return part_of(x, x.dim() - 1, group.rank(), group.world_size());
}

struct CopyToGroup : torch::autograd::Function<CopyToGroup> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const std::shared_ptr<ProcessGroup>& group) {
    ctx->saved_data["group"] = hold(group);
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    return {summed(grad[0], *held(ctx)), torch::Tensor()};
  }
};

struct ReduceFromGroup : torch::autograd::Function<ReduceFromGroup> {
  static torch::Tensor forward(AutogradContext*, const torch::Tensor& x,
                               const std::shared_ptr<ProcessGroup>& group) {
    return summed(x, *group);
  }
  static variable_list backward(AutogradContext*, variable_list grad) {
    return {grad[0], torch::Tensor()};
  }
};

struct GatherLastDim : torch::autograd::Function<GatherLastDim> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const std::shared_ptr<ProcessGroup>& group) {
    ctx->saved_data["group"] = hold(group);
    return gathered(x, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    return {own_part(grad[0], *held(ctx)), torch::Tensor()};
  }
};

struct SplitLastDim : torch::autograd::Function<SplitLastDim> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const std::shared_ptr<ProcessGroup>& group) {
    ctx->saved_data["group"] = hold(group);
    return own_part(x, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    return {gathered(grad[0], *held(ctx)), torch::Tensor()};
  }
};

bool alone(const std::shared_ptr<ProcessGroup>& group) { return size_of(group.get()) == 1; }

/// Every process's x [k, ...] joined into [T * k, ...], in rank order.
torch::Tensor gathered_first(const torch::Tensor& x, ProcessGroup& group) {
  const torch::Tensor part = x.contiguous();
  torch::Tensor full = torch::empty({group.world_size() * part.numel()}, part.options());
  group.all_gather_shards(full, part.view({-1}));
  std::vector<int64_t> shape(part.sizes().begin(), part.sizes().end());
  shape[0] *= group.world_size();
  return full.view(shape);
}

/// A chunked layer's chunks [k, ...] of every process, [C, ...] in chunk order, forward; this
/// process's chunks of the gradient backward.
struct GatherChunks : torch::autograd::Function<GatherChunks> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const std::shared_ptr<ProcessGroup>& group) {
    ctx->saved_data["group"] = hold(group);
    ctx->saved_data["k"] = x.size(0);
    return gathered_first(x, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const int64_t k = ctx->saved_data["k"].toInt();
    return {grad[0].narrow(0, held(ctx)->rank() * k, k), torch::Tensor()};
  }
};

/// `x` to each of this process's k chunks of a chunked column-parallel layer, forward; each
/// chunk's gradient of x gathered over the group and added in chunk order, backward (the
/// all-reduce of copy_to_group, in an order that does not depend on T).
struct FanOut : torch::autograd::Function<FanOut> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& x,
                               const std::shared_ptr<ProcessGroup>& group, int64_t k) {
    ctx->saved_data["group"] = hold(group);
    ctx->saved_data["sizes"] = x.sizes().vec();
    ctx->saved_data["dtype"] = x.scalar_type();
    return variable_list(static_cast<size_t>(k), x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const std::vector<int64_t> sizes = ctx->saved_data["sizes"].toIntVector();
    const auto dtype = ctx->saved_data["dtype"].toScalarType();
    torch::Device device = torch::kCPU;
    for (const auto& g : grads) {
      if (g.defined()) device = g.device();
    }
    std::vector<torch::Tensor> each;
    for (const auto& g : grads) {
      each.push_back(g.defined() ? g : torch::zeros(sizes, torch::dtype(dtype).device(device)));
    }
    torch::Tensor mine = torch::stack(each);
    const auto& group = held(ctx);
    if (!alone(group)) mine = gathered_first(mine, *group);
    return {in_chunk_order(mine), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor all_chunks(const torch::Tensor& mine, const std::shared_ptr<ProcessGroup>& group) {
  return alone(group) ? mine : GatherChunks::apply(mine, group);
}

torch::Tensor in_chunk_order(const torch::Tensor& all) {
  torch::Tensor sum = all[0];
  for (int64_t c = 1; c < all.size(0); ++c) sum = sum + all[c];
  return sum;
}

std::vector<torch::Tensor> fan_out(const torch::Tensor& x,
                                   const std::shared_ptr<ProcessGroup>& group, int64_t k) {
  return FanOut::apply(x, group, k);
}

int size_of(const ProcessGroup* group) { return group ? group->world_size() : 1; }
int rank_of(const ProcessGroup* group) { return group ? group->rank() : 0; }

torch::Tensor copy_to_group(const torch::Tensor& x, const std::shared_ptr<ProcessGroup>& group) {
  return alone(group) ? x : CopyToGroup::apply(x, group);
}

torch::Tensor reduce_from_group(const torch::Tensor& x,
                                const std::shared_ptr<ProcessGroup>& group) {
  return alone(group) ? x : ReduceFromGroup::apply(x, group);
}

torch::Tensor gather_last_dim(const torch::Tensor& x, const std::shared_ptr<ProcessGroup>& group) {
  return alone(group) ? x : GatherLastDim::apply(x, group);
}

torch::Tensor split_last_dim(const torch::Tensor& x, const std::shared_ptr<ProcessGroup>& group) {
  return alone(group) ? x : SplitLastDim::apply(x, group);
}

std::pair<int64_t, int64_t> part_range(int64_t n, int part, int parts) {
  TORCH_CHECK(parts >= 1 && part >= 0 && part < parts, "part_range: part ", part, " of ", parts);
  const int64_t chunk = (n + parts - 1) / parts;
  const int64_t start = std::min<int64_t>(part * chunk, n);
  const int64_t rows = std::min<int64_t>(chunk, n - start);
  TORCH_CHECK(rows > 0, "part_range: ", n, " rows leave part ", part, " of ", parts, " empty");
  return {start, rows};
}

int64_t whole_size(const Split& split, int64_t part_size, int parts) {
  return split.whole > 0 ? split.whole : part_size * parts;
}

torch::Tensor part_of(const torch::Tensor& full, int64_t dim, int part, int parts, int64_t blocks) {
  dim = dim < 0 ? dim + full.dim() : dim;
  const int64_t n = full.size(dim);
  if (blocks == 1) {
    const auto [start, rows] = part_range(n, part, parts);
    return full.narrow(dim, start, rows).contiguous();
  }
  TORCH_CHECK(parts >= 1 && blocks >= 1 && n % (parts * blocks) == 0, "part_of: ", n,
              " is not divisible into ", blocks, " blocks of ", parts, " parts");
  // [..., n, ...] -> [..., blocks, n / blocks, ...], this part of each block, back to one dim.
  std::vector<int64_t> shape(full.sizes().begin(), full.sizes().end());
  shape[size_t(dim)] = n / blocks;
  shape.insert(shape.begin() + dim, blocks);
  const int64_t m = n / blocks / parts;
  std::vector<int64_t> out(full.sizes().begin(), full.sizes().end());
  out[size_t(dim)] = blocks * m;
  return full.reshape(shape).narrow(dim + 1, part * m, m).reshape(out).contiguous();
}

torch::Tensor whole_of(const torch::Tensor& part, const Split& split, ProcessGroup& group) {
  torch::NoGradGuard no_grad;
  const int t = group.world_size();
  const int64_t dim = split.dim < 0 ? split.dim + part.dim() : split.dim;
  // Parts of unequal rows (one block: part_range's) travel padded to the first's rows.
  const int64_t whole = whole_size(split, part.size(dim), t);
  const int64_t chunk = split.blocks == 1 ? part_range(whole, 0, t).second : part.size(dim);
  torch::Tensor p = part.contiguous();
  if (p.size(dim) < chunk) {
    std::vector<int64_t> pad(p.sizes().begin(), p.sizes().end());
    pad[size_t(dim)] = chunk - p.size(dim);
    p = torch::cat({p, torch::zeros(pad, p.options())}, dim);
  }
  // Every part side by side along `dim` ([T, ...] moved there), then each block's slices in
  // rank order: [..., T, blocks, m, ...] -> [..., blocks, T, m, ...].
  torch::Tensor flat = torch::empty({t * p.numel()}, p.options());
  group.all_gather_shards(flat, p.view({-1}));
  std::vector<int64_t> parts_shape{t};
  for (int64_t d : p.sizes()) parts_shape.push_back(d);
  torch::Tensor all = flat.view(parts_shape).movedim(0, dim);  // [..., T, n_part, ...]
  std::vector<int64_t> shape(all.sizes().begin(), all.sizes().end());
  const int64_t m = p.size(dim) / split.blocks;
  shape[size_t(dim) + 1] = m;
  shape.insert(shape.begin() + dim + 1, split.blocks);  // [..., T, blocks, m, ...]
  std::vector<int64_t> out(p.sizes().begin(), p.sizes().end());
  out[size_t(dim)] *= t;
  return all.reshape(shape).transpose(dim, dim + 1).reshape(out).narrow(dim, 0, whole).contiguous();
}

namespace {
/// A seed of part `part`'s from `fork` (splitmix64's mixing: parts far apart).
uint64_t part_seed(uint64_t fork, int part) {
  uint64_t z = fork + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(part + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
}  // namespace

PartDraws::PartDraws(int part, int parts, const c10::Device& device) {
  if (parts <= 1) return;
  at::Generator cpu = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    fork_ = at::check_generator<at::CPUGeneratorImpl>(cpu)->random64();
    cpu_state_ = cpu.get_state();
    if (device.is_cuda()) {
      device_ = device;
      at::Generator g = at::globalContext().defaultGenerator(device);
      std::lock_guard<std::mutex> device_lock(g.mutex());
      device_state_ = g.get_state();
    }
  }
  enter(part);
}

namespace {
/// `fn`(generator, is the CPU's) of the CPU's default generator, then of `device`'s when
/// given, each under its lock.
void each_generator(const std::optional<c10::Device>& device,
                    const std::function<void(at::Generator&, bool)>& fn) {
  at::Generator cpu = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(cpu.mutex());
  fn(cpu, true);
  if (device) {
    at::Generator g = at::globalContext().defaultGenerator(*device);
    std::lock_guard<std::mutex> device_lock(g.mutex());
    fn(g, false);
  }
}
}  // namespace

void PartDraws::enter(int part) {
  if (!cpu_state_.defined()) return;
  const uint64_t z = part_seed(fork_, part);
  each_generator(device_, [z](at::Generator& g, bool) { g.set_current_seed(z); });
}

PartDraws::~PartDraws() {
  if (!cpu_state_.defined()) return;
  each_generator(device_, [this](at::Generator& g, bool cpu) {
    g.set_state(cpu ? cpu_state_ : device_state_);
  });
}

namespace {
thread_local std::shared_ptr<ProcessGroup> building;
thread_local int64_t building_chunk_count = 0;
}  // namespace

BuildScope::BuildScope(std::shared_ptr<ProcessGroup> group, int64_t chunks) {
  building = std::move(group);
  building_chunk_count = chunks > 1 ? chunks : 0;
}
BuildScope::~BuildScope() {
  building.reset();
  building_chunk_count = 0;
}
const std::shared_ptr<ProcessGroup>& building_group() { return building; }
int64_t building_chunks() { return building_chunk_count; }
bool building_cut() { return size_of(building.get()) > 1 || building_chunk_count > 0; }

torch::Tensor column_product(const torch::Tensor& x, const torch::Tensor& weight,
                             const std::shared_ptr<ProcessGroup>& group, int64_t chunks) {
  if (chunks <= 0) return torch::matmul(copy_to_group(x, group), weight.t());
  const auto xs = fan_out(x, group, chunks);
  const auto ws = weight.split(weight.size(0) / chunks, 0);
  std::vector<torch::Tensor> ys;
  for (size_t j = 0; j < ws.size(); ++j) ys.push_back(torch::matmul(xs[j], ws[j].contiguous().t()));
  return torch::cat(ys, -1);
}

torch::Tensor chunkwise(const std::vector<torch::Tensor>& ins, int64_t dim, int64_t chunks,
                        const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& fn) {
  if (chunks <= 0) return fn(ins);
  std::vector<std::vector<torch::Tensor>> pieces;
  for (const auto& t : ins) pieces.push_back(t.split(t.size(dim) / chunks, dim));
  std::vector<torch::Tensor> out;
  for (int64_t j = 0; j < chunks; ++j) {
    std::vector<torch::Tensor> these;
    for (const auto& p : pieces) these.push_back(p[size_t(j)].contiguous());
    out.push_back(fn(these));
  }
  return torch::cat(out, dim);
}

torch::Tensor chunkwise(const torch::Tensor& y, int64_t chunks,
                        const std::function<torch::Tensor(const torch::Tensor&)>& fn) {
  return chunkwise(std::vector<torch::Tensor>{y}, -1, chunks,
                   [&fn](const std::vector<torch::Tensor>& in) { return fn(in[0]); });
}

}  // namespace tp

}  // namespace unitrain
