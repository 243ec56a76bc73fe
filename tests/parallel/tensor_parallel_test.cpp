// Tensor parallelism's layers on threads as the processes of a tensor group: each computes, and
// backward gives each its part of, what the plain layer computes on one process.
#include "unitrain/parallel/tensor_parallel.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <mutex>

#include "parallel/run_ranks.h"
#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/parallel/chunked_norm.h"

namespace unitrain {
namespace {

void expect_close(const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-6))
      << what << ": largest difference " << (got - want).abs().max().item<double>();
}

/// Full tensors every rank reads (made before the threads start: the generator is global).
struct MlpCase {
  torch::Tensor x = torch::randn({3, 4, 6});
  torch::Tensor w1 = torch::randn({8, 6}), b1 = torch::randn({8});
  torch::Tensor w2 = torch::randn({5, 8}), b2 = torch::randn({5});
  torch::Tensor r = torch::randn({3, 4, 5});  // the loss: sum(out * r)
};

TEST(TensorParallel, ColumnThenRowComputeWhatOneProcessComputesAndTheirGradientsParts) {
  torch::manual_seed(1);
  const MlpCase c;
  // One process: Linear, gelu, Linear.
  auto x = c.x.clone().requires_grad_(true);
  auto w1 = c.w1.clone().requires_grad_(true), b1 = c.b1.clone().requires_grad_(true);
  auto w2 = c.w2.clone().requires_grad_(true), b2 = c.b2.clone().requires_grad_(true);
  const auto want =
      torch::nn::functional::linear(torch::gelu(torch::nn::functional::linear(x, w1, b1)), w2, b2);
  (want * c.r).sum().backward();
  test::run_shared_ranks(2, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    ColumnParallelLinear up(6, 8, true, group);
    RowParallelLinear down(8, 5, true, group);
    up->load_full(c.w1, c.b1);
    down->load_full(c.w2, c.b2);
    auto xr = c.x.clone().requires_grad_(true);
    const auto out = down(torch::gelu(up(xr)));
    expect_close(out, want.detach(), "output");
    (out * c.r).sum().backward();
    expect_close(xr.grad(), x.grad(), "the input's gradient");
    expect_close(up->weight.grad(), tp::part_of(w1.grad(), 0, rank, 2), "column weight");
    expect_close(up->bias.grad(), tp::part_of(b1.grad(), 0, rank, 2), "column bias");
    expect_close(down->weight.grad(), tp::part_of(w2.grad(), 1, rank, 2), "row weight");
    expect_close(down->bias.grad(), b2.grad(), "row bias (whole, the same everywhere)");
  });
}

TEST(TensorParallel, AGatheredColumnOutputFeedsAWholeInputRow) {
  torch::manual_seed(2);
  const MlpCase c;
  auto x = c.x.clone().requires_grad_(true);
  auto w1 = c.w1.clone().requires_grad_(true), w2 = c.w2.clone().requires_grad_(true);
  const auto hidden = torch::nn::functional::linear(x, w1);
  const auto want = torch::nn::functional::linear(hidden, w2);
  (want * c.r).sum().backward();
  test::run_shared_ranks(2, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    ColumnParallelLinear up(6, 8, false, group, /*gather_output=*/true);
    RowParallelLinear down(8, 5, false, group, /*input_is_parallel=*/false);
    up->load_full(c.w1);
    down->load_full(c.w2);
    auto xr = c.x.clone().requires_grad_(true);
    const auto whole = up(xr);
    expect_close(whole, hidden.detach(), "the gathered hidden layer");
    const auto out = down(whole);
    expect_close(out, want.detach(), "output");
    (out * c.r).sum().backward();
    expect_close(xr.grad(), x.grad(), "the input's gradient");
    expect_close(up->weight.grad(), tp::part_of(w1.grad(), 0, rank, 2), "column weight");
    expect_close(down->weight.grad(), tp::part_of(w2.grad(), 1, rank, 2), "row weight");
  });
}

TEST(TensorParallel, AVocabularyParallelEmbeddingLooksUpEachIdInItsOwnersRows) {
  torch::manual_seed(3);
  const auto table = torch::randn({10, 4});
  const auto ids = torch::tensor({{0, 4, 5, 9}, {7, 7, 2, 5}}, torch::kLong);
  const auto r = torch::randn({2, 4, 4});
  auto t = table.clone().requires_grad_(true);
  const auto want = torch::embedding(t, ids);
  (want * r).sum().backward();
  test::run_shared_ranks(2, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    VocabParallelEmbedding e(10, 4, group);
    EXPECT_EQ(e->vocab_start(), 5 * rank);
    e->load_full(table);
    const auto out = e(ids);
    expect_close(out, want.detach(), "embeddings");
    (out * r).sum().backward();
    expect_close(e->weight.grad(), tp::part_of(t.grad(), 0, rank, 2), "the table's gradient");
  });
}

TEST(TensorParallel, VocabularyParallelCrossEntropyEqualsTheFullOnesLossAndGradient) {
  torch::manual_seed(4);
  const auto logits = torch::randn({6, 12}) * 4;
  const auto targets = torch::tensor({0, 5, 6, 11, -100, 3}, torch::kLong);
  auto l = logits.clone().requires_grad_(true);
  const auto want = torch::nn::functional::cross_entropy(
      l, targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  want.sum().backward();
  for (const int world : {2, 3}) {
    test::run_shared_ranks(world, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
      const int64_t n = 12 / world;
      auto part = tp::part_of(logits, 1, rank, world).requires_grad_(true);
      const auto loss = vocab_parallel_cross_entropy(part, targets, rank * n, group);
      expect_close(loss, want.detach(), "losses");
      EXPECT_EQ(loss[4].item<float>(), 0.0f);  // ignore_index
      loss.sum().backward();
      expect_close(part.grad(), tp::part_of(l.grad(), 1, rank, world), "the logits' gradient");
    });
  }
}

TEST(TensorParallel, TheSameSeedDrawsTheSameModelWhateverTheSplit) {
  torch::manual_seed(5);
  const torch::nn::Linear whole(6, 8);
  std::mutex draw;  // one generator: each rank draws from the same state in turn
  test::run_shared_ranks(2, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    std::lock_guard<std::mutex> lock(draw);
    torch::manual_seed(5);
    ColumnParallelLinear column(6, 8, true, group);
    EXPECT_TRUE(column->weight.equal(tp::part_of(whole->weight, 0, rank, 2)));
    EXPECT_TRUE(column->bias.equal(tp::part_of(whole->bias, 0, rank, 2)));
  });
}

TEST(TensorParallel, ALayerThatDoesNotDivideIsRefusedByItsSize) {
  test::run_shared_ranks(2, [&](int, const std::shared_ptr<ProcessGroup>& group) {
    const std::string e = test::config_error_of([&] { RowParallelLinear(7, 6, true, group); });
    EXPECT_TRUE(test::contains(e,
                               "a row-parallel Linear: its in_features (7) is not "
                               "divisible by the 2 processes of its tensor group"))
        << e;
    const std::string q = test::config_error_of(
        [&] { ColumnParallelLinear(6, 9, true, group, /*gather_output=*/false, /*blocks=*/3); });
    EXPECT_TRUE(test::contains(q, "out_features per block (3) is not divisible")) << q;
  });
  test::run_shared_ranks(3, [&](int, const std::shared_ptr<ProcessGroup>& group) {
    // 4 rows over 3: parts of 2 leave the third none.
    const std::string e = test::config_error_of([&] { VocabParallelEmbedding(4, 2, group); });
    EXPECT_TRUE(test::contains(e, "its vocabulary (4) leaves a process of the 3")) << e;
  });
}

TEST(TensorParallel, AVocabularyThatDoesNotDivideIsCutAsEvenlyAsItGoes) {
  // 11 ids over 3 processes: rows 0-3, 4-7, 8-10; the embedding, a head of the same rows and
  // the loss over them compute what the whole ones do.
  torch::manual_seed(8);
  const auto table = torch::randn({11, 4});
  const auto x = torch::randn({5, 4});
  const auto ids = torch::tensor({0, 3, 4, 8, 10}, torch::kLong);
  const auto targets = torch::tensor({10, 2, 7, 4, 8}, torch::kLong);
  auto t = table.clone().requires_grad_(true);
  const auto logits = torch::matmul(x, t.t());
  const auto want = torch::nn::functional::cross_entropy(
      logits, targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  const auto r = torch::randn({5, 4});
  (want.sum() + (torch::embedding(t, ids) * r).sum()).backward();
  EXPECT_EQ(tp::part_range(11, 2, 3), std::make_pair(int64_t{8}, int64_t{3}));
  test::run_shared_ranks(3, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    VocabParallelEmbedding e(11, 4, group);
    e->load_full(table);
    EXPECT_EQ(e->vocab_start(), 4 * rank);
    EXPECT_EQ(e->weight.size(0), rank == 2 ? 3 : 4);
    const auto looked_up = e(ids);
    const auto mine = torch::matmul(tp::copy_to_group(x, group), e->weight.t());
    const auto loss = vocab_parallel_cross_entropy(mine, targets, e->vocab_start(), group);
    expect_close(loss, want.detach(), "the losses");
    (loss.sum() + (looked_up * r).sum()).backward();
    expect_close(e->weight.grad(), tp::part_of(t.grad(), 0, rank, 3), "the table's gradient");
    // The parts join back into the whole table, and a column-parallel head cuts the same rows.
    EXPECT_TRUE(tp::whole_of(e->weight.detach(), e->split(), *group).equal(table));
    ColumnParallelLinear head(4, 11, false, group);
    EXPECT_EQ(head->weight.size(0), e->weight.size(0));
  });
}

TEST(TensorParallel, Conv1DLayoutLayersComputeWhatTheirWholeProductDoes) {
  // GPT-2's [in, out] weights: c_attn's three blocks by columns, c_proj by rows.
  torch::manual_seed(9);
  const auto x = torch::randn({2, 3, 4});
  const auto wa = torch::randn({4, 12}), ba = torch::randn({12});
  const auto wp = torch::randn({12, 4}), bp = torch::randn({4});
  const auto want = torch::addmm(bp, torch::addmm(ba, x.reshape({-1, 4}), wa), wp).view({2, 3, 4});
  test::run_shared_ranks(2, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    ColumnParallelLinear qkv(4, 12, true, group, /*gather_output=*/false, /*blocks=*/3,
                             /*in_out=*/true);
    RowParallelLinear proj(12, 4, true, group, /*input_is_parallel=*/true, /*in_out=*/true);
    EXPECT_TRUE(qkv->bias.equal(torch::zeros({6})));  // drawn as Conv1D: the model initialises
    qkv->load_full(wa, ba);
    proj->load_full(wp.view({3, 2, 2, 4}).transpose(0, 1).reshape({12, 4}), bp);
    EXPECT_EQ(qkv->weight.sizes(), (std::vector<int64_t>{4, 6}));
    EXPECT_TRUE(qkv->weight.equal(tp::part_of(wa, 1, rank, 2, 3)));
    EXPECT_TRUE(tp::whole_of(qkv->weight.detach(), qkv->split(), *group).equal(wa));
    EXPECT_TRUE(tp::whole_of(proj->weight.detach(), proj->split(), *group)
                    .equal(wp.view({3, 2, 2, 4}).transpose(0, 1).reshape({12, 4})));
    // Each process's q|k|v columns feed its rows of c_proj (reordered to match above).
    expect_close(proj(qkv(x)), want, "c_proj of c_attn");
  });
}

TEST(TensorParallel, EachPartDrawsFromItsOwnStreamAndTheSharedOneGoesOnAlike) {
  // What part `part` of `parts` draws inside PartDraws, and the shared stream after it.
  auto draws_of = [](int part, int parts) {
    torch::manual_seed(12);
    torch::Tensor inside;
    {
      tp::PartDraws draws(part, parts, torch::kCPU);
      inside = torch::rand({8});
    }
    return std::make_pair(inside, torch::rand({8}));
  };
  const auto [first, after_first] = draws_of(0, 2);
  const auto [second, after_second] = draws_of(1, 2);
  EXPECT_FALSE(first.equal(second));               // each part its own masks
  EXPECT_TRUE(after_first.equal(after_second));    // the shared stream the same on both
  EXPECT_TRUE(draws_of(0, 2).first.equal(first));  // a replay (recompute) draws them again
  torch::manual_seed(12);
  const auto plain = torch::rand({8});
  EXPECT_TRUE(draws_of(0, 1).first.equal(plain));  // one part: the shared stream itself
}

/// What chunked layers (distributed.reproducible_chunks: 4 chunks) compute on `parts`
/// processes: a column (6 -> 8), GELU chunk by chunk, a row (8 -> 5), a head (5 -> 12) and its
/// cross entropy, beside a fused q|k|v in Conv1D's layout (6 -> 3 x 8) given a gradient: the
/// losses, the input's gradient, each parameter's whole gradient and the chunked norm.
struct ChunkedRun {
  torch::Tensor losses, x_grad;
  std::vector<torch::Tensor> grads;
  double norm = 0;
};

/// The inputs and whole weights every run reads (drawn before the threads start).
struct ChunkedCase {
  int seeded = (torch::manual_seed(21), 0);  // (first: the members draw after it)
  torch::Tensor x = torch::randn({2, 3, 6}), targets = torch::randint(12, {6});
  torch::Tensor r = torch::randn({2, 3, 24});
  torch::Tensor w_up = torch::randn({8, 6}), b_up = torch::randn({8});
  torch::Tensor w_down = torch::randn({5, 8}), b_down = torch::randn({5});
  torch::Tensor w_head = torch::randn({12, 5}), w_qkv = torch::randn({6, 24});
  torch::Tensor b_qkv = torch::randn({24});
};

ChunkedRun chunked_run(int parts) {
  const ChunkedCase c;
  const torch::Tensor &x = c.x, &targets = c.targets, &r = c.r, &w_up = c.w_up, &b_up = c.b_up;
  const torch::Tensor &w_down = c.w_down, &b_down = c.b_down, &w_head = c.w_head;
  const torch::Tensor &w_qkv = c.w_qkv, &b_qkv = c.b_qkv;
  std::vector<ChunkedRun> runs(static_cast<size_t>(parts));
  auto body = [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    auto holder = std::make_shared<torch::nn::Module>();
    ColumnParallelLinear up{nullptr}, head{nullptr}, qkv{nullptr};
    RowParallelLinear down{nullptr};
    {
      tp::BuildScope scope(group, 4);
      up = holder->register_module("up", ColumnParallelLinear(6, 8, true, group));
      down = holder->register_module("down", RowParallelLinear(8, 5, true, group));
      head = holder->register_module("head", ColumnParallelLinear(5, 12, false, group));
      qkv = holder->register_module(
          "qkv", ColumnParallelLinear(6, 24, true, group, false, /*blocks=*/3, /*in_out=*/true));
    }
    up->load_full(w_up, b_up);
    down->load_full(w_down, b_down);
    head->load_full(w_head);
    qkv->load_full(w_qkv, b_qkv);
    auto xr = x.clone().requires_grad_(true);
    auto gelu = [](const torch::Tensor& h) { return torch::gelu(h); };
    const auto hidden = down(tp::chunkwise(up(xr), up->chunks(), gelu));
    const auto logits = head(hidden).reshape({6, -1});
    const auto losses = vocab_parallel_cross_entropy(logits, targets, rank * (12 / parts), group,
                                                     -100, head->chunks());
    const auto q = qkv(xr);
    torch::autograd::backward({losses.sum(), q},
                              {torch::ones({}), tp::part_of(r, -1, rank, parts, 3)});
    ChunkedRun& out = runs[size_t(rank)];
    out.losses = losses.detach();
    out.x_grad = xr.grad();
    std::map<std::string, tp::Split> splits;
    for (auto& [name, split] : tp::splits_of(*holder)) splits.emplace(name, split);
    for (const auto& p : holder->named_parameters()) {
      const auto it = splits.find(p.key());
      out.grads.push_back(group && it != splits.end()
                              ? tp::whole_of(p.value().grad(), it->second, *group)
                              : p.value().grad().clone());
    }
    out.norm = ChunkedNorm(*holder, group).norm();
  };
  if (parts == 1) {
    body(0, nullptr);
  } else {
    test::run_shared_ranks(parts, body);
  }
  for (int r = 1; r < parts; ++r) {  // every part ends with the same whole values
    EXPECT_TRUE(runs[size_t(r)].losses.equal(runs[0].losses));
    EXPECT_TRUE(runs[size_t(r)].x_grad.equal(runs[0].x_grad));
    EXPECT_EQ(runs[size_t(r)].norm, runs[0].norm);
  }
  return runs[0];
}

TEST(TensorParallel, ChunkedLayersComputeTheSameBitsOnAnyNumberOfParts) {
  const ChunkedRun one = chunked_run(1), two = chunked_run(2), four = chunked_run(4);
  for (const ChunkedRun* other : {&two, &four}) {
    EXPECT_TRUE(other->losses.equal(one.losses));
    EXPECT_TRUE(other->x_grad.equal(one.x_grad));
    ASSERT_EQ(other->grads.size(), one.grads.size());
    for (size_t i = 0; i < one.grads.size(); ++i) {
      EXPECT_TRUE(other->grads[i].equal(one.grads[i])) << "parameter " << i;
    }
    EXPECT_EQ(other->norm, one.norm);
  }
  // And they compute what the plain layers do, up to rounding.
  const ChunkedCase c;
  auto x = c.x.clone().requires_grad_(true);
  const auto hidden = torch::nn::functional::linear(
      torch::gelu(torch::nn::functional::linear(x, c.w_up, c.b_up)), c.w_down, c.b_down);
  const auto logits = torch::nn::functional::linear(hidden, c.w_head).reshape({6, -1});
  const auto losses = torch::nn::functional::cross_entropy(
      logits, c.targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  const auto q = torch::addmm(c.b_qkv, x.reshape({6, 6}), c.w_qkv).reshape({2, 3, 24});
  torch::autograd::backward({losses.sum(), q}, {torch::ones({}), c.r});
  expect_close(one.losses, losses.detach(), "the losses");
  expect_close(one.x_grad, x.grad(), "the input's gradient");
  EXPECT_GT(one.norm, 0);
}

TEST(TensorParallel, ChunksThatDoNotDivideAreRefusedByName) {
  tp::BuildScope scope(nullptr, 4);
  try {
    ColumnParallelLinear bad(6, 10, true, nullptr);
    FAIL() << "10 outputs in 4 chunks";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("reproducible_chunks"), std::string::npos) << e.what();
  }
}

TEST(TensorParallel, PartsOfBlocksJoinBackIntoTheWholeOnEveryProcess) {
  torch::manual_seed(6);
  const auto full = torch::randn({12, 18});
  for (const int world : {2, 3}) {
    test::run_shared_ranks(world, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
      for (const tp::Split split :
           {tp::Split{0, 1}, tp::Split{1, 1}, tp::Split{0, 2}, tp::Split{1, 3}, tp::Split{-1, 3}}) {
        const auto part = tp::part_of(full, split.dim, rank, world, split.blocks);
        EXPECT_TRUE(tp::whole_of(part, split, *group).equal(full))
            << "dim " << split.dim << ", blocks " << split.blocks;
      }
    });
  }
  // Part 1 of 2 of three blocks of 6 columns: columns 3..5, 9..11, 15..17.
  const auto part = tp::part_of(full, 1, 1, 2, 3);
  EXPECT_TRUE(part.equal(
      torch::cat({full.narrow(1, 3, 3), full.narrow(1, 9, 3), full.narrow(1, 15, 3)}, 1)));
}

TEST(TensorParallel, AFusedQkvColumnHoldsEachProcesssHeadsOfEachBlock) {
  torch::manual_seed(7);
  const auto x = torch::randn({2, 3, 4});
  const auto w = torch::randn({12, 4}), b = torch::randn({12});
  const auto want = torch::nn::functional::linear(x, w, b);
  test::run_shared_ranks(2, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    ColumnParallelLinear qkv(4, 12, true, group, /*gather_output=*/false, /*blocks=*/3);
    qkv->load_full(w, b);
    // q, k and v of this process's half of the heads.
    const auto mine = qkv(x);
    expect_close(mine, tp::part_of(want, -1, rank, 2, 3), "this process's q|k|v");
    ColumnParallelLinear whole(4, 12, true, group, /*gather_output=*/true, /*blocks=*/3);
    whole->load_full(w, b);
    expect_close(whole(x), want, "the gathered q|k|v, in the full layer's order");
  });
}

TEST(TensorParallel, AModulesCutParametersAreFoundByName) {
  struct Net : torch::nn::Module {
    Net() {
      embed = register_module("embed", VocabParallelEmbedding(8, 4, nullptr));
      qkv = register_module("qkv", ColumnParallelLinear(4, 12, true, nullptr, false, 3));
      out = register_module("out", RowParallelLinear(4, 4, true, nullptr));
      norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({4})));
    }
    VocabParallelEmbedding embed{nullptr};
    ColumnParallelLinear qkv{nullptr};
    RowParallelLinear out{nullptr};
    torch::nn::LayerNorm norm{nullptr};
  };
  Net net;
  std::map<std::string, std::pair<int64_t, int64_t>> got;
  for (const auto& [name, split] : tp::splits_of(net)) got[name] = {split.dim, split.blocks};
  const std::map<std::string, std::pair<int64_t, int64_t>> want = {{"embed.weight", {0, 1}},
                                                                   {"qkv.weight", {0, 3}},
                                                                   {"qkv.bias", {0, 3}},
                                                                   {"out.weight", {1, 1}}};
  EXPECT_EQ(got, want);  // out.bias and the norm whole
}

TEST(ProcessGroupSubgroup, EachSubgroupReducesAmongItsMembersAlone) {
  test::run_shared_ranks(4, [&](int rank, const std::shared_ptr<ProcessGroup>& world) {
    const std::vector<int> members = rank < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
    auto pair = world->subgroup("tp" + std::to_string(rank / 2), members);
    EXPECT_EQ(pair->rank(), rank % 2);
    EXPECT_EQ(pair->world_size(), 2);
    EXPECT_EQ(pair->sum_of(double(rank)), rank < 2 ? 1.0 : 5.0);
    EXPECT_EQ(world->sum_of(1.0), 4.0);  // the world still whole
    try {
      world->subgroup("odd", {rank == 0 ? 1 : 0});
      ADD_FAILURE() << "a subgroup without this rank was made";
    } catch (const TrainError& e) {
      EXPECT_TRUE(test::contains(e.what(), "is not one of its members")) << e.what();
    }
  });
}

}  // namespace
}  // namespace unitrain
