// ZeRO stage 3's parameters: each rank keeps an equal part of each unit's flat parameters; a
// unit gathered holds every parameter's values, released holds no memory; gradients reduce into
// the shards; autograd's saved views see the values gathered again for backward.
#include "unitrain/parallel/sharded_parameters.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "parallel/run_ranks.h"
#include "unitrain/core/unit_parts.h"

namespace unitrain {
namespace {

using test::run_ranks;

/// The same values on every rank: two units (a Linear's weight and bias; a vector) and a frozen
/// tensor in unit 0.
std::vector<torch::Tensor> unit_test_params() {
  std::vector<torch::Tensor> out;
  out.push_back(torch::arange(15, torch::kFloat32).view({3, 5}).sin().requires_grad_());
  out.push_back(torch::arange(3, torch::kFloat32).cos().requires_grad_());
  out.push_back(torch::linspace(-1, 1, 7).requires_grad_());
  out.push_back(torch::ones({2}));  // frozen
  return out;
}

int64_t storage_bytes(const torch::Tensor& t) { return static_cast<int64_t>(t.storage().nbytes()); }

TEST(ShardedParameters, EachRankKeepsAnEqualPartAndGatherRestoresEveryValue) {
  for (int world : {2, 3}) {
    run_ranks(world, [world](int rank, ProcessGroup& g) {
      auto params = unit_test_params();
      std::vector<torch::Tensor> before;
      for (const auto& p : params) before.push_back(p.detach().clone());
      ShardedParameters sharded(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), params,
                                {0, 0, 1, 0}, {0, 1, 0, 0});
      EXPECT_EQ(sharded.units(), 2);
      // Unit 0: weight (key 0), bias (key 1), frozen (key 0, not trained): three flats; unit 1:
      // one.
      ASSERT_EQ(sharded.shards().size(), 4u);
      EXPECT_EQ(sharded.shard_keys(), (std::vector<int>{0, 1, 0, 0}));
      const int64_t weight_part = (15 + world - 1) / world;
      EXPECT_EQ(sharded.shards()[0].numel(), weight_part);
      EXPECT_TRUE(sharded.shards()[0].requires_grad());
      EXPECT_FALSE(sharded.shards()[2].requires_grad());  // the frozen one
      auto expected = before[0].reshape({-1});
      for (int64_t i = 0; i < weight_part; ++i) {  // this rank's part of the weight
        const int64_t at = rank * weight_part + i;
        const float want = at < 15 ? expected[at].item<float>() : 0.0f;  // padding: zeros
        EXPECT_EQ(sharded.shards()[0][i].item<float>(), want) << rank << " " << i;
      }
      for (const auto& p : params) EXPECT_EQ(storage_bytes(p), 0);  // released
      EXPECT_EQ(params[0].sizes(), (std::vector<int64_t>{3, 5}));   // shapes stay

      sharded.gather(0);
      EXPECT_TRUE(sharded.gathered(0));
      EXPECT_FALSE(sharded.gathered(1));
      EXPECT_TRUE(torch::equal(params[0], before[0]));
      EXPECT_TRUE(torch::equal(params[1], before[1]));
      EXPECT_TRUE(torch::equal(params[3], before[3]));
      EXPECT_EQ(storage_bytes(params[2]), 0);
      sharded.gather(1);
      EXPECT_TRUE(torch::equal(params[2], before[2]));
      sharded.release(0);
      EXPECT_EQ(storage_bytes(params[0]), 0);
      EXPECT_TRUE(torch::equal(params[2], before[2]));
      EXPECT_EQ(sharded.whole_bytes(), (15 + 3 + 7 + 2) * 4);
      EXPECT_LE(sharded.shard_bytes(), sharded.whole_bytes() / world + 4 * 4);
    });
  }
}

TEST(ShardedParameters, GradientsAreAveragedIntoTheShardsAndAccumulate) {
  for (auto by :
       {ProcessGroup::ReduceScatterBy::PartReduces, ProcessGroup::ReduceScatterBy::AllReduce}) {
    run_ranks(3, [by](int rank, ProcessGroup& g) {
      auto params = unit_test_params();
      ShardedParameters sharded(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), params,
                                {0, 0, 1, 0}, {0, 0, 0, 0}, {}, by);
      // Rank r's gradient of parameter i: (i + 1) * (r + 1) everywhere; the bias has none on
      // rank 1 (counts as zeros).
      auto set_grads = [&] {
        for (size_t i = 0; i < 3; ++i) {
          if (i == 1 && rank == 1) continue;
          params[i].mutable_grad() = torch::full_like(params[i], double(i + 1) * (rank + 1));
        }
      };
      set_grads();
      sharded.reduce_gradients(0, 3.0);
      EXPECT_FALSE(params[0].grad().defined());  // the whole gradients are freed
      // Unit 0's trained flat: weight (15) then bias (3), 18 elements, 6 a rank.
      const torch::Tensor& shard = sharded.shards()[0];
      ASSERT_EQ(shard.numel(), 6);
      auto want = [&](int64_t at) {
        if (at < 15) return 1.0 * (1 + 2 + 3) / 3;  // weight: 1 x (1 + 2 + 3), averaged
        return 2.0 * (1 + 3) / 3;                   // bias: rank 1 sent none
      };
      for (int64_t i = 0; i < 6; ++i) {
        EXPECT_FLOAT_EQ(shard.grad()[i].item<float>(), want(rank * 6 + i)) << rank << " " << i;
      }
      set_grads();
      sharded.reduce_gradients(0, 3.0);  // a second micro-batch adds
      EXPECT_FLOAT_EQ(shard.grad()[0].item<float>(), 2 * want(rank * 6));
      EXPECT_FALSE(sharded.shards()[1].grad().defined());  // unit 1 not reduced yet
    });
  }
}

TEST(ShardedParameters, BackwardSeesTheValuesGatheredAgainAfterARelease) {
  run_ranks(2, [](int rank, ProcessGroup& g) {
    auto linear = torch::nn::Linear(4, 3);
    auto reference = torch::nn::Linear(4, 3);
    {  // the same values on every rank (the ranks are threads: no shared generator)
      torch::NoGradGuard no_grad;
      for (auto* m : {&linear, &reference}) {
        (*m)->weight.copy_(torch::arange(12, torch::kFloat32).view({3, 4}).sin());
        (*m)->bias.copy_(torch::arange(3, torch::kFloat32).cos());
      }
    }
    auto x = torch::linspace(-2, 2, 8).view({2, 4});
    reference->forward(x).pow(2).sum().backward();

    std::vector<torch::Tensor> params{linear->weight, linear->bias};
    ShardedParameters sharded(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), params,
                              {0, 0}, {0, 0});
    sharded.gather(0);
    auto loss = linear->forward(x).pow(2).sum();
    sharded.release(0);  // the saved weight view's memory goes
    sharded.gather(0);   // and comes back for backward
    loss.backward();
    auto weight_grad = linear->weight.grad().clone();
    EXPECT_TRUE(torch::allclose(weight_grad, reference->weight.grad())) << rank;
    sharded.reduce_gradients(0, 2.0);  // equal on both ranks: the average is the same
    const torch::Tensor& shard = sharded.shards()[0];
    auto whole = torch::cat(
        {reference->weight.grad().reshape({-1}), reference->bias.grad(), torch::zeros({1})});
    EXPECT_TRUE(torch::allclose(shard.grad(), whole.narrow(0, rank * 8, 8)));
  });
}

TEST(ShardedParameters, Bfloat16TravelsOverGloo) {
  run_ranks(2, [](int rank, ProcessGroup& g) {
    std::vector<torch::Tensor> params{torch::linspace(0, 1, 5, torch::kBFloat16).requires_grad_()};
    auto before = params[0].detach().clone();
    ShardedParameters sharded(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), params, {0},
                              {0});
    sharded.gather(0);
    EXPECT_TRUE(torch::equal(params[0], before));
    params[0].mutable_grad() = torch::ones_like(params[0]) * (rank + 1);
    sharded.reduce_gradients(0, 1.0);
    EXPECT_EQ(sharded.shards()[0].grad().scalar_type(), torch::kBFloat16);
    EXPECT_EQ(sharded.shards()[0].grad()[0].item<float>(), 3.0f);
  });
}

TEST(ShardedParameters, CutMakesEachRanksPartsOfWholeValuesAndGatherWholePutsThemBack) {
  for (int world : {2, 3}) {
    run_ranks(world, [](int rank, ProcessGroup& g) {
      auto params = unit_test_params();
      for (auto& p : params) p.set_data(p.detach().to(torch::kBFloat16));
      ShardedParameters sharded(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), params,
                                {0, 0, 1, 0}, {0, 1, 0, 0}, {"w", "b", "v", "frozen"});
      // Float32 values by name (as bf16-true's masters, or an average): cut into float32 parts
      // laid out as the bfloat16 shards are.
      std::map<std::string, torch::Tensor> whole;
      const std::vector<std::string> names{"w", "b", "v", "frozen"};
      for (size_t i = 0; i < params.size(); ++i) {
        // The same on every rank; finer than bfloat16 can hold.
        whole[names[i]] = torch::arange(params[i].numel(), torch::kFloat32)
                              .mul(0.37)
                              .cos()
                              .add(static_cast<double>(i) + 1e-3)
                              .view(params[i].sizes());
      }
      const std::vector<torch::Tensor> parts =
          sharded.cut(whole, "the test's values", torch::kFloat32);
      ASSERT_EQ(parts.size(), sharded.shards().size());
      for (size_t s = 0; s < parts.size(); ++s) {
        EXPECT_EQ(parts[s].scalar_type(), torch::kFloat32);
        EXPECT_EQ(parts[s].numel(), sharded.shards()[s].numel());
      }
      // Rank `rank`'s part of flat 0 (the weight): its elements of the flattened weight.
      const int64_t n = parts[0].numel();
      const auto flat_w = whole["w"].reshape({-1});
      for (int64_t i = 0; i < n; ++i) {
        const int64_t at = rank * n + i;
        EXPECT_EQ(parts[0][i].item<float>(), at < 15 ? flat_w[at].item<float>() : 0.0f);
      }
      // gather_whole: every parameter's float32 values again, on every rank.
      const auto back = sharded.gather_whole(parts);
      ASSERT_EQ(back.size(), whole.size());
      for (const auto& [name, t] : whole) EXPECT_TRUE(torch::equal(back.at(name), t)) << name;
      // A name missing from the values is named.
      whole.erase("v");
      try {
        sharded.cut(whole, "the test's values", torch::kFloat32);
        ADD_FAILURE() << "no error";
      } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("the test's values has no tensor v"),
                  std::string::npos)
            << e.what();
      }
    });
  }
}

// A model built in parts (core/unit_parts.h): each unit keeps this rank's part from the moment
// it is built; ShardedParameters gathers each unit once to cut its shards; model.init_from's
// values load into the parts; restore_kept_parts makes them whole again.
TEST(ShardedParameters, AModelBuiltInPartsHoldsOnlyItsPartUntilEachUnitIsCut) {
  for (int world : {2, 3}) {
    run_ranks(world, [world](int rank, ProcessGroup& g) {
      std::vector<torch::Tensor> params, before;
      torch::Tensor view_of_another;
      {
        BuildInParts in_parts(rank, world);
        params = unit_test_params();
        for (const auto& p : params) before.push_back(p.detach().clone());
        unit_built({params[0], params[1], params[3]});
        unit_built({params[2]});
        torch::Tensor shared = torch::arange(6, torch::kFloat32);
        view_of_another = shared.narrow(0, 2, 3);
        unit_built({view_of_another});  // its memory is another's: stays whole
      }
      for (const auto& p : params) {
        EXPECT_TRUE(kept_in_parts(p));
        EXPECT_EQ(storage_bytes(p), 0);
      }
      EXPECT_EQ(params[0].sizes(), (std::vector<int64_t>{3, 5}));  // shapes stay
      EXPECT_FALSE(kept_in_parts(view_of_another));
      EXPECT_EQ(view_of_another[0].item<float>(), 2.0f);
      // model.init_from: new whole values of the vector, into this rank's part of them.
      const torch::Tensor loaded = before[2] * 2 + 1;
      EXPECT_TRUE(load_into_parts(params[2], loaded));
      EXPECT_FALSE(load_into_parts(view_of_another, loaded));
      ShardedParameters sharded(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), params,
                                {0, 0, 1, 0}, {0, 1, 0, 0});
      for (const auto& p : params) EXPECT_FALSE(kept_in_parts(p));
      sharded.gather(0);
      sharded.gather(1);
      EXPECT_TRUE(torch::equal(params[0], before[0]));
      EXPECT_TRUE(torch::equal(params[1], before[1]));
      EXPECT_TRUE(torch::equal(params[2], loaded));
      EXPECT_TRUE(torch::equal(params[3], before[3]));
      EXPECT_FALSE(load_into_parts(params[2], loaded));  // no longer kept: nothing done
    });
  }
  run_ranks(2, [](int rank, ProcessGroup& g) {
    std::vector<torch::Tensor> params, before;
    {
      BuildInParts in_parts(rank, 2);
      params = unit_test_params();
      for (const auto& p : params) before.push_back(p.detach().clone());
      unit_built({params[0], params[1]});
      {
        BuildInParts::Paused whole;
        unit_built({params[2]});  // paused: stays whole
      }
    }
    unit_built({params[3]});  // outside a scope: stays whole
    EXPECT_TRUE(kept_in_parts(params[0]));
    EXPECT_FALSE(kept_in_parts(params[2]));
    EXPECT_FALSE(kept_in_parts(params[3]));
    restore_kept_parts(g, params);  // what a run that does not shard does
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_FALSE(kept_in_parts(params[i]));
      EXPECT_TRUE(torch::equal(params[i], before[i])) << i;
    }
  });
}

}  // namespace
}  // namespace unitrain
