// distributed.zero: 3's optimizer files read by parameter (unflatten_optimizer_files): a run
// without ZeRO 3 resuming from a checkpoint of one with it; and the other way
// (load_flattened_optimizer_state): a ZeRO 3 run from a checkpoint of one without it.
#include "unitrain/checkpoint/optimizer_merge.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_util.h"
#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/compat/optimizer_state_key.h"
#include "unitrain/core/error.h"
#include "unitrain/optim/optimizer.h"

namespace unitrain {
namespace {

// a (2x3) and b (4) in flat 0 (group 0), c (3) in flat 1 (group 1), cut for 2 ranks: flat 0 is
// 10 elements (parts of 5), flat 1 is 3 padded to 4 (parts of 2).
ShardLayout two_flats() {
  ShardLayout layout;
  layout.world_size = 2;
  layout.flats.push_back({0, 0, "Float", 10, 5, {{"a", {2, 3}, 0}, {"b", {4}, 6}}});
  layout.flats.push_back({0, 1, "Float", 3, 2, {{"c", {3}, 0}}});
  return layout;
}

/// `t` flattened, padded with zeros to `parts` * `part` elements, part `r`.
torch::Tensor part_of(const torch::Tensor& t, int64_t part, int r) {
  torch::Tensor padded = torch::zeros({2 * part});
  padded.narrow(0, 0, t.numel()).copy_(t.flatten());
  return padded.narrow(0, r * part, part).clone();
}

TEST(UnflattenOptimizerFiles, EachParameterGetsItsElementsOfTheFlatsState) {
  register_builtin_optimizers();
  torch::manual_seed(3);
  const torch::Tensor a0 = torch::randn({2, 3}), b0 = torch::randn({4}), c0 = torch::randn({3});
  const torch::Tensor ga = torch::randn({2, 3}), gb = torch::randn({4}), gc = torch::randn({3});
  // The run without ZeRO 3: Adam over [a, b] and [c], two steps.
  auto whole = [&](const torch::Tensor& v) { return v.clone().requires_grad_(true); };
  torch::Tensor a = whole(a0), b = whole(b0), c = whole(c0);
  torch::optim::Adam plain(
      {torch::optim::OptimizerParamGroup({a, b}), torch::optim::OptimizerParamGroup({c})},
      torch::optim::AdamOptions(0.1));
  // ZeRO 3's: each rank steps its parts of the flats (Adam is elementwise: the same numbers).
  std::vector<std::vector<char>> files;
  std::vector<torch::Tensor> shards;
  std::vector<std::unique_ptr<torch::optim::Adam>> parted;
  for (int r = 0; r < 2; ++r) {
    torch::Tensor s0 = part_of(torch::cat({a0.flatten(), b0}), 5, r).requires_grad_(true);
    torch::Tensor s1 = part_of(c0, 2, r).requires_grad_(true);
    shards.insert(shards.end(), {s0, s1});
    parted.push_back(std::make_unique<torch::optim::Adam>(
        std::vector<torch::optim::OptimizerParamGroup>{torch::optim::OptimizerParamGroup({s0}),
                                                       torch::optim::OptimizerParamGroup({s1})},
        torch::optim::AdamOptions(0.1)));
  }
  for (int step = 0; step < 2; ++step) {
    a.mutable_grad() = ga * (step + 1);
    b.mutable_grad() = gb * (step + 1);
    c.mutable_grad() = gc * (step + 1);
    plain.step();
    for (int r = 0; r < 2; ++r) {
      shards[2 * r].mutable_grad() = part_of(torch::cat({ga.flatten(), gb}) * (step + 1), 5, r);
      shards[2 * r + 1].mutable_grad() = part_of(gc * (step + 1), 2, r);
      parted[r]->step();
    }
  }
  std::vector<OptimizerBytes> parts;
  for (int r = 0; r < 2; ++r) {
    parts.push_back(OptimizerBytes::of(save_optimizer_state(*parted[r]),
                                       "optimizer-rank-" + std::to_string(r)));
  }
  const std::vector<char> by_parameter =
      unflatten_optimizer_files(parts, two_flats(), {{"a", "b"}, {"c"}});
  // Where the plain run's parameters are now.
  torch::Tensor a2 = whole(a.detach()), b2 = whole(b.detach()), c2 = whole(c.detach());
  torch::optim::Adam resumed(
      {torch::optim::OptimizerParamGroup({a2, b2}), torch::optim::OptimizerParamGroup({c2})},
      torch::optim::AdamOptions(0.5));
  load_optimizer_state(resumed, by_parameter, "by parameter");
  EXPECT_EQ(resumed.param_groups()[1].options().get_lr(), 0.1);  // the files' options
  const std::vector<std::pair<torch::Tensor, torch::Tensor>> pairs{{a, a2}, {b, b2}, {c, c2}};
  for (const auto& [want, got] : pairs) {
    const auto& s = static_cast<const torch::optim::AdamParamState&>(
        *plain.state().at(optimizer_state_key(want)));
    const auto& t = static_cast<const torch::optim::AdamParamState&>(
        *resumed.state().at(optimizer_state_key(got)));
    EXPECT_EQ(t.step(), s.step());
    EXPECT_TRUE(torch::equal(t.exp_avg(), s.exp_avg()));
    EXPECT_TRUE(torch::equal(t.exp_avg_sq(), s.exp_avg_sq()));
  }
  // Steps on from there as the plain optimizer does.
  a.mutable_grad() = ga;
  a2.mutable_grad() = ga;
  b.mutable_grad() = gb;
  b2.mutable_grad() = gb;
  c.mutable_grad() = gc;
  c2.mutable_grad() = gc;
  plain.step();
  resumed.step();
  EXPECT_TRUE(torch::equal(a, a2));
  EXPECT_TRUE(torch::equal(c, c2));

  // A parameter the layout does not train is named.
  EXPECT_TRUE(test::contains(test::error_of<TrainError>([&] {
                               unflatten_optimizer_files(parts, two_flats(), {{"a", "x"}, {"c"}});
                             }),
                             "holds no state of parameter x in optimizer group 0"));
  // A parameter in another group than the saved run had it in (no_decay_bias_norm changed).
  EXPECT_TRUE(test::contains(test::error_of<TrainError>([&] {
                               unflatten_optimizer_files(parts, two_flats(), {{"a", "c"}, {"b"}});
                             }),
                             "holds parameter c's state in optimizer group 1, this optimizer has "
                             "it in group 0"));
}

TEST(LoadFlattenedOptimizerState, EachRankGetsItsPartsOfTheParametersState) {
  register_builtin_optimizers();
  torch::manual_seed(4);
  auto whole = [](const torch::Tensor& v) { return v.clone().requires_grad_(true); };
  torch::Tensor a = whole(torch::randn({2, 3})), b = whole(torch::randn({4}));
  torch::Tensor c = whole(torch::randn({3}));
  // The model's order puts c between a and b: the saved groups are [a, b] and [c] all the same.
  const std::vector<std::string> order{"a", "c", "b"};
  torch::optim::Adam plain(
      {torch::optim::OptimizerParamGroup({a, b}), torch::optim::OptimizerParamGroup({c})},
      torch::optim::AdamOptions(0.1));
  const torch::Tensor ga = torch::randn({2, 3}), gb = torch::randn({4}), gc = torch::randn({3});
  for (int step = 0; step < 2; ++step) {
    a.mutable_grad() = ga * (step + 1);
    b.mutable_grad() = gb * (step + 1);
    c.mutable_grad() = gc * (step + 1);
    plain.step();
  }
  const std::vector<OptimizerBytes> saved{
      OptimizerBytes::of(save_optimizer_state(plain), "optimizer.pt")};
  auto state_of = [](torch::optim::Optimizer& o, const torch::Tensor& p) {
    return static_cast<const torch::optim::AdamParamState&>(*o.state().at(optimizer_state_key(p)));
  };
  for (int r = 0; r < 2; ++r) {
    torch::Tensor s0 = torch::zeros({5}).requires_grad_(true);
    torch::Tensor s1 = torch::zeros({2}).requires_grad_(true);
    torch::optim::Adam parted(
        {torch::optim::OptimizerParamGroup({s0}), torch::optim::OptimizerParamGroup({s1})},
        torch::optim::AdamOptions(0.5));
    load_flattened_optimizer_state(parted, saved, two_flats(), order, r, "optimizer.pt, cut");
    EXPECT_EQ(parted.param_groups()[1].options().get_lr(), 0.1);  // the file's options
    const auto& flat0 = state_of(parted, s0);
    const auto& flat1 = state_of(parted, s1);
    EXPECT_EQ(flat0.step(), state_of(plain, a).step());
    EXPECT_TRUE(torch::equal(
        flat0.exp_avg(),
        part_of(torch::cat({state_of(plain, a).exp_avg().flatten(), state_of(plain, b).exp_avg()}),
                5, r)));
    EXPECT_TRUE(torch::equal(flat0.exp_avg_sq(),
                             part_of(torch::cat({state_of(plain, a).exp_avg_sq().flatten(),
                                                 state_of(plain, b).exp_avg_sq()}),
                                     5, r)));
    EXPECT_TRUE(torch::equal(flat1.exp_avg(), part_of(state_of(plain, c).exp_avg(), 2, r)));
  }

  torch::Tensor s0 = torch::zeros({5}).requires_grad_(true);
  torch::Tensor s1 = torch::zeros({2}).requires_grad_(true);
  torch::optim::Adam parted(
      {torch::optim::OptimizerParamGroup({s0}), torch::optim::OptimizerParamGroup({s1})},
      torch::optim::AdamOptions(0.5));
  // A parameter that went to the other group (no_decay_bias_norm changed) changes the counts.
  ShardLayout moved = two_flats();
  moved.flats[0].members.pop_back();
  moved.flats[0].length = 6;
  moved.flats[1].members.push_back({"b", {4}, 3});
  EXPECT_TRUE(test::contains(test::error_of<TrainError>([&] {
                               load_flattened_optimizer_state(parted, saved, moved, order, 0, "x");
                             }),
                             "optimizer group 0 trains 2 parameters, this run's 1"));
  // Members of one flat stepped a different number of times cannot be one flat.
  torch::optim::Adam uneven(
      {torch::optim::OptimizerParamGroup({a, b}), torch::optim::OptimizerParamGroup({c})},
      torch::optim::AdamOptions(0.1));
  a.mutable_grad() = ga;
  b.mutable_grad() = gb;
  c.mutable_grad() = gc;
  uneven.step();
  b.mutable_grad() = torch::Tensor();
  uneven.step();
  const std::vector<OptimizerBytes> odd{
      OptimizerBytes::of(save_optimizer_state(uneven), "optimizer.pt")};
  EXPECT_TRUE(test::contains(test::error_of<TrainError>([&] {
                               load_flattened_optimizer_state(parted, odd, two_flats(), order, 0,
                                                              "x");
                             }),
                             "parameters a and b were stepped differently ('step')"));
}

}  // namespace
}  // namespace unitrain
