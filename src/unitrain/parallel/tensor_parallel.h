#pragma once
// Tensor parallelism (Megatron-LM's split): a layer's weight cut over the processes of a tensor
// group, each computing its part; the collectives that join the parts are autograd functions,
// so backward joins the gradients the same way. A model built from these layers computes on T
// processes what the same model of plain layers computes on one.
//
//   column-parallel Linear: W [out, in] cut by rows (out / T each); the input arrives whole, the
//     output leaves in parts (or gathered). Backward sums the input's gradient over the group.
//   row-parallel Linear: W [out, in] cut by columns (in / T each); the input arrives in parts
//     (a column-parallel layer's output), the partial products are summed over the group (one
//     all-reduce), the bias added once after the sum.
//   vocabulary-parallel Embedding: the table [V, D] cut by rows; each process looks up the ids
//     in its rows, zeros for the others, and the group sums them.
//   vocabulary-parallel cross entropy: the logits [N, V / T] of each process's rows of the
//     vocabulary, the loss computed from three small reductions (max, sum of exponentials, the
//     target's logit), so no process ever holds the full logits.
//
// A null group or a group of one process: the plain layer's computation, no collective.
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace unitrain {

class ProcessGroup;

namespace tp {

/// The processes of `group` (1 for null).
int size_of(const ProcessGroup* group);
/// This process's place in `group` (0 for null).
int rank_of(const ProcessGroup* group);

/// Identity forward; backward sums the gradient over the group (what enters a column-parallel
/// layer: each process's part of the layer contributes to the input's gradient).
torch::Tensor copy_to_group(const torch::Tensor& x, const std::shared_ptr<ProcessGroup>& group);
/// Sums over the group forward; identity backward (what leaves a row-parallel layer).
torch::Tensor reduce_from_group(const torch::Tensor& x, const std::shared_ptr<ProcessGroup>& group);
/// Every process's `x` joined along the last dimension, in rank order, forward; this process's
/// part of the gradient backward. `x`'s shape must be the same on every process.
torch::Tensor gather_last_dim(const torch::Tensor& x, const std::shared_ptr<ProcessGroup>& group);
/// This process's part of `x` along the last dimension forward (its size divisible by the
/// group's); the gradient gathered backward.
torch::Tensor split_last_dim(const torch::Tensor& x, const std::shared_ptr<ProcessGroup>& group);

/// How a parameter is cut over a tensor group: along `dim`, which holds `blocks` equal blocks
/// side by side (3 for a fused q|k|v projection), each cut into the group's parts: part r is
/// the r-th slice of every block, in block order.
struct Split {
  int64_t dim = 0;
  int64_t blocks = 1;
  /// The whole tensor's size along `dim`; 0: the parts' size times the group's. Parts of one
  /// block may differ (part_range: a vocabulary of 50257 over 2 processes).
  int64_t whole = 0;
  /// A chunked layer's chunks on this process (distributed.reproducible_chunks; 0: not
  /// chunked): each part's slice of each block is that many equal chunks, part r holding
  /// chunks r x chunks ... (r + 1) x chunks - 1 of the whole's.
  int64_t chunks = 0;
};

/// Part `part` of `n` rows cut over `parts` processes: {first row, rows}. Equal parts of
/// ceil(n / parts) rows, the last the rest (n divisible: n / parts each). TORCH_CHECK when a
/// part would be empty.
std::pair<int64_t, int64_t> part_range(int64_t n, int part, int parts);
/// The whole size along a Split's dim of a tensor whose part there has `part_size` rows.
int64_t whole_size(const Split& split, int64_t part_size, int parts);

/// Part `part` of `parts` of `full` cut along `dim` holding `blocks` blocks (tp::Split; a copy,
/// contiguous). One block: part_range's rows. Several: TORCH_CHECK when the dimension does not
/// divide into equal parts of each block (the layers refuse such sizes first).
torch::Tensor part_of(const torch::Tensor& full, int64_t dim, int part, int parts,
                      int64_t blocks = 1);
/// The whole tensor from every process's `part` (cut as `split` says), on every process: the
/// inverse of part_of, a collective of `group`.
torch::Tensor whole_of(const torch::Tensor& part, const Split& split, ProcessGroup& group);

/// The parameters of `module` that its parallel layers cut (by name, as named_parameters()
/// names them), and how; a LoRA adapter on a parallel layer (children `lora_A`, `lora_B`) is
/// cut with it: a column-parallel layer's lora_B [out, r] by rows as its output, a
/// row-parallel layer's lora_A [r, in] by columns as its input. A parameter not listed is
/// whole on every process.
std::vector<std::pair<std::string, Split>> splits_of(const torch::nn::Module& module);
/// Each tensor of `named` (named as `module`'s parameters) that is the whole of a parameter
/// `module`'s parallel layers cut, replaced by this process's part: whole weights (a Hugging
/// Face folder, model.init_from) loaded into a model built cut. Tensors of other shapes are left
/// for the load's own check to name.
void cut_whole(const torch::nn::Module& module,
               std::vector<std::pair<std::string, torch::Tensor>>& named);

/// When `layer` is one of the parallel layers: its whole weight drawn N(0, std) as the plain
/// layer's would be from the same generator state (biases zero, an embedding's padding row
/// zero), its part kept, and true; false for any other module. For models' initialisations
/// (the same model whatever the split).
bool init_normal(torch::nn::Module& layer, double std);

/// While it lives, the default generators (the CPU's, and `device`'s when it is a GPU) draw
/// from a stream of part `part` of `parts` (Megatron-LM's model-parallel generator): what each
/// process draws over its own part of a layer — the attention's dropout over its heads — is then
/// its own, not the same masks on every part. The stream forks from the shared one, which
/// takes one 64-bit draw on the CPU (the same on every process of the group: their shared
/// streams stay equal) and is otherwise left as it was. One part: nothing changes. Activation
/// checkpointing's replay forks the same stream again.
class PartDraws {
 public:
  PartDraws(int part, int parts, const c10::Device& device);
  ~PartDraws();
  PartDraws(const PartDraws&) = delete;
  PartDraws& operator=(const PartDraws&) = delete;
  /// Draws from part `part`'s stream of the same fork from now on (a chunked layer's chunks:
  /// each its own stream, whichever process computes it).
  void enter(int part);

 private:
  torch::Tensor cpu_state_, device_state_;  ///< the shared streams' states to come back to
  std::optional<c10::Device> device_;
  uint64_t fork_ = 0;
};

/// While it lives, the built-in models built on this thread (transformer_lm, gpt2, llama) build
/// their layers cut over `group` (null or one process: whole), and the parallel layers built on
/// it (any model's) compute in `chunks` fixed chunks when above 1 (distributed.reproducible_
/// chunks: see ColumnParallelLinear) — the built-in models then build parallel layers even on
/// one process. Scopes do not nest.
class BuildScope {
 public:
  explicit BuildScope(std::shared_ptr<ProcessGroup> group, int64_t chunks = 1);
  ~BuildScope();
  BuildScope(const BuildScope&) = delete;
  BuildScope& operator=(const BuildScope&) = delete;
};
/// The group of the BuildScope open on this thread; null when none is open.
const std::shared_ptr<ProcessGroup>& building_group();
/// The chunks of the BuildScope open on this thread; 0 when none is open or it has one chunk
/// (not chunked).
int64_t building_chunks();
/// Whether a built-in model built now builds parallel layers: a group of more than one
/// process, or chunks above 1.
bool building_cut();

/// x [..., in] times weight [rows, in] transposed, weight this process's rows of a whole cut
/// over `group` (a head tied to a vocabulary-parallel embedding's table): its part of the
/// product, the input's gradient summed over the group; in `chunks` chunks (this process's, 0:
/// not chunked) as a chunked ColumnParallelLinear computes them.
torch::Tensor column_product(const torch::Tensor& x, const torch::Tensor& weight,
                             const std::shared_ptr<ProcessGroup>& group, int64_t chunks);

/// `fn` of the tensors `ins` taken over each of `chunks` equal pieces of their dimension `dim`
/// apart, each piece contiguous, the results joined along `dim` (chunks 0: fn(ins)): what
/// follows a chunked layer — an activation over its output, the attention over its heads —
/// computed piece by piece in the same shapes whatever the group's size (a vectorised kernel
/// rounds an element by where it falls in the tensor, and a kernel may split its work by
/// size).
torch::Tensor chunkwise(const std::vector<torch::Tensor>& ins, int64_t dim, int64_t chunks,
                        const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& fn);
/// chunkwise of one tensor's last dimension.
torch::Tensor chunkwise(const torch::Tensor& y, int64_t chunks,
                        const std::function<torch::Tensor(const torch::Tensor&)>& fn);

}  // namespace tp

/// A Linear layer whose output features are cut over a tensor group: this process holds
/// weight [out / T, in] and bias [out / T], rows [rank * out / T, (rank + 1) * out / T) of the
/// full layer's (with `blocks` > 1, the output holds that many blocks side by side, e.g. a
/// fused q|k|v, and this process holds its slice of each: tp::Split). forward(x [..., in])
/// gives this process's part of the output [..., out / T], or the whole [..., out] with
/// `gather_output`. The weights are initialised as a full
/// torch::nn::Linear(in, out) would be from the same generator state (kaiming_uniform a =
/// sqrt(5), bias U(-1/sqrt(in), 1/sqrt(in))), then cut: every process draws the same full
/// tensors, so the same seed gives the same model whatever T. One block need not divide by T
/// (part_range: a vocabulary's head; not with `gather_output`).
/// `in_out`: Hugging Face's Conv1D layout (GPT-2): weight [in, out / T], y = x W + b, drawn as
/// Conv1D is (nothing: the weight left for the model's initialisation, the bias zero).
///
/// Chunked (built inside a tp::BuildScope of C chunks, T dividing C and out / blocks): the
/// output is computed as C chunks of out / C (of each block) by products of the same shapes
/// whatever T, each process computing its C / T; backward gathers each chunk's part of the
/// input's gradient and adds them in chunk order (no all-reduce, whose order of addition
/// depends on T): the same bits on any T dividing C (distributed.reproducible over tensor
/// parallelism).
class ColumnParallelLinearImpl : public torch::nn::Module {
 public:
  ColumnParallelLinearImpl(int64_t in, int64_t out, bool bias, std::shared_ptr<ProcessGroup> group,
                           bool gather_output = false, int64_t blocks = 1, bool in_out = false);
  torch::Tensor forward(const torch::Tensor& x);
  /// Copies this process's rows of a full layer's weight [out, in] ([in, out] when `in_out`)
  /// and bias [out] (undefined: none) into its own.
  void load_full(const torch::Tensor& weight, const torch::Tensor& bias = {});

  /// How the weight is cut: along out (dim 0; 1 when `in_out`), in `blocks` blocks.
  tp::Split split() const { return {in_out_ ? 1 : 0, blocks_, out_, chunks_}; }
  /// How the bias is cut: dim 0, in `blocks` blocks.
  tp::Split bias_split() const { return {0, blocks_, out_, chunks_}; }
  /// The processes it is cut over (1: whole).
  int parts() const { return tp::size_of(group_.get()); }
  /// This process's part (0 when whole).
  int part() const { return tp::rank_of(group_.get()); }
  /// Its tensor group (null: whole).
  const std::shared_ptr<ProcessGroup>& group() const { return group_; }
  /// This process's chunks (0: not chunked).
  int64_t chunks() const { return chunks_; }

  torch::Tensor weight;
  torch::Tensor bias;  ///< undefined without a bias

 private:
  torch::Tensor chunked_forward(const torch::Tensor& x);

  std::shared_ptr<ProcessGroup> group_;
  bool gather_output_;
  int64_t blocks_;
  int64_t out_;
  bool in_out_;
  int64_t chunks_ = 0;
};
TORCH_MODULE(ColumnParallelLinear);

namespace tp {
/// The attention over the heads `layer` computes (q, k, v [B, H, T, D] of this process's heads
/// along dim 1; `layer` null: a whole model's): `attend`(q, k, v); chunked, each chunk's heads
/// apart (chunkwise). `draws` (dropout in training): over a cut layer, from the part's stream
/// (PartDraws), each chunk's own when chunked, so the masks are the same whatever T.
torch::Tensor attend_heads(
    const ColumnParallelLinearImpl* layer, const std::vector<torch::Tensor>& qkv, bool draws,
    const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& attend);
}  // namespace tp

/// A Linear layer whose input features are cut over a tensor group: weight [out, in / T] (the
/// full layer's columns [rank * in / T, (rank + 1) * in / T)) and the whole bias [out].
/// forward(x) takes this process's part of the input [..., in / T] (a column-parallel layer's
/// output), or the whole input [..., in] when not `input_is_parallel` (it is then cut here);
/// the output [..., out] is the same on every process. Initialised as
/// ColumnParallelLinear is: a full Linear(in, out)'s draws, cut. `in_out`: Conv1D's layout,
/// weight [in / T, out], drawn as ColumnParallelLinear's `in_out` is.
/// Chunked (a tp::BuildScope of C chunks): the product is C partial products of in / C columns
/// each (C / T on each process), gathered and added in chunk order, then the bias: the same
/// bits on any T dividing C.
class RowParallelLinearImpl : public torch::nn::Module {
 public:
  RowParallelLinearImpl(int64_t in, int64_t out, bool bias, std::shared_ptr<ProcessGroup> group,
                        bool input_is_parallel = true, bool in_out = false);
  torch::Tensor forward(const torch::Tensor& x);
  /// Copies this process's columns of a full weight [out, in] (its rows of [in, out] when
  /// `in_out`), and the whole bias [out].
  void load_full(const torch::Tensor& weight, const torch::Tensor& bias = {});
  /// How the weight is cut: along in (dim 1; 0 when `in_out`).
  tp::Split split() const { return {in_out_ ? 0 : 1, 1, in_, chunks_}; }
  /// The processes it is cut over (1: whole).
  int parts() const { return tp::size_of(group_.get()); }
  /// This process's part (0 when whole).
  int part() const { return tp::rank_of(group_.get()); }
  /// Its tensor group (null: whole).
  const std::shared_ptr<ProcessGroup>& group() const { return group_; }
  /// Whether forward takes its part of the input (else the whole, cut there).
  bool input_is_parallel() const { return input_is_parallel_; }
  /// This process's chunks (0: not chunked).
  int64_t chunks() const { return chunks_; }

  torch::Tensor weight;
  torch::Tensor bias;

 private:
  std::shared_ptr<ProcessGroup> group_;
  bool input_is_parallel_;
  int64_t in_;
  bool in_out_;
  int64_t chunks_ = 0;
};
TORCH_MODULE(RowParallelLinear);

/// An Embedding whose table [num_embeddings, dim] is cut by rows over a tensor group: this
/// process holds rows [vocab_start(), vocab_start() + weight.size(0)): tp::part_range's, so a
/// vocabulary T does not divide (GPT-2's 50257) is cut as evenly as it goes. forward(ids)
/// gives the full embeddings [..., dim] on every process. Initialised as torch::nn::Embedding's
/// (N(0, 1) over the full table), then cut.
class VocabParallelEmbeddingImpl : public torch::nn::Module {
 public:
  /// `padding_idx` >= 0: that id's row gets no gradient (torch::nn::Embedding's padding_idx).
  VocabParallelEmbeddingImpl(int64_t num_embeddings, int64_t dim,
                             std::shared_ptr<ProcessGroup> group, int64_t padding_idx = -1);
  torch::Tensor forward(const torch::Tensor& ids);
  /// Copies this process's rows of a full table [num_embeddings, dim] (its padding row zeroed).
  void load_full(const torch::Tensor& table);
  /// The first id this process's rows hold.
  int64_t vocab_start() const { return start_; }
  /// How the table is cut: by rows.
  tp::Split split() const { return {0, 1, num_embeddings_, chunks_}; }
  /// This process's chunks (0: not chunked): a head tied to it computes in as many.
  int64_t chunks() const { return chunks_; }
  /// The processes it is cut over (1: whole).
  int parts() const { return tp::size_of(group_.get()); }
  /// This process's part (0 when whole).
  int part() const { return tp::rank_of(group_.get()); }

  torch::Tensor weight;

 private:
  std::shared_ptr<ProcessGroup> group_;
  int64_t start_ = 0;
  int64_t num_embeddings_;
  int64_t padding_idx_ = -1;  ///< this process's row of it; -1: none here
  int64_t chunks_ = 0;
};
TORCH_MODULE(VocabParallelEmbedding);

/// Cross entropy of logits whose last dimension is cut over `group`: `logits` [N, V / T] are
/// this process's columns [vocab_start, vocab_start + V / T) of the full [N, V]; `targets` [N]
/// the full vocabulary's ids, the same on every process. Returns each row's loss [N] (0 where
/// the target is `ignore_index`), equal on every process and to
/// cross_entropy(full logits, targets, reduction none) up to rounding; its gradient reaches
/// each process's logits. Computed in float32 at least. `chunks` > 0 (a chunked head's, this
/// process's count): the sum of exponentials taken over each chunk of V / (T x chunks) apart
/// and the chunks' sums added in chunk order over the group: the same bits whatever T.
torch::Tensor vocab_parallel_cross_entropy(const torch::Tensor& logits,
                                           const torch::Tensor& targets, int64_t vocab_start,
                                           const std::shared_ptr<ProcessGroup>& group,
                                           int64_t ignore_index = -100, int64_t chunks = 0);

}  // namespace unitrain
