// MasterWeights and Precision: bf16-true's float32 masters keep small updates that bfloat16
// alone loses; fp16-mixed refused on the CPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/precision/precision.h"

namespace unitrain {
namespace {

struct TinyNet : torch::nn::Module {
  TinyNet() {
    fc = register_module("fc", torch::nn::Linear(2, 1));
    bn = register_module("bn", torch::nn::BatchNorm1d(1));
  }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};

TEST(MasterWeights, CastsTheModuleAndKeepsFloat32Masters) {
  torch::manual_seed(0);
  TinyNet net;
  const torch::Tensor w = net.fc->weight.detach().clone();
  MasterWeights masters(net, torch::kBFloat16);
  EXPECT_EQ(net.fc->weight.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(net.bn->running_mean.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(net.bn->num_batches_tracked.scalar_type(), torch::kLong);  // not floating: kept
  EXPECT_TRUE(
      torch::equal(net.fc->weight.to(torch::kFloat32), w.to(torch::kBFloat16).to(torch::kFloat32)));
  const auto params = masters.parameters();
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].first, "fc.weight");
  EXPECT_EQ(params[0].second.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(params[0].second, w));  // the masters keep every bit
  for (const auto& [name, t] : masters.buffers()) {
    EXPECT_EQ(t.scalar_type(), name == "bn.num_batches_tracked" ? torch::kLong : torch::kFloat32)
        << name;
  }
}

// Updates of 1e-3 on a weight of 1: a bfloat16 step at 1 is 2^-7, so plain bfloat16 training
// rounds every update away, while the masters add them up and the model follows.
TEST(MasterWeights, SmallUpdatesAreNotLostToBfloat16Rounding) {
  auto run = [](bool with_masters) {
    torch::nn::Linear fc(torch::nn::LinearOptions(1, 1).bias(false));
    torch::NoGradGuard no_grad;
    fc->weight.fill_(1.0);
    std::unique_ptr<MasterWeights> masters;
    if (with_masters)
      masters = std::make_unique<MasterWeights>(*fc, torch::kBFloat16);
    else
      fc->to(torch::kBFloat16);
    torch::optim::SGD sgd(fc->parameters(), torch::optim::SGDOptions(1e-3));
    if (masters) masters->adopt(sgd);
    for (int step = 0; step < 100; ++step) {
      fc->weight.mutable_grad() = torch::ones({1, 1}, torch::kBFloat16);  // d loss / d w = 1
      if (masters) masters->gradients_to_masters();
      sgd.step();
      if (masters) masters->masters_to_model();
    }
    return fc->weight.to(torch::kFloat32).item<float>();
  };
  EXPECT_EQ(run(false), 1.0f);  // stalled
  const float learned = run(true);
  EXPECT_NEAR(learned, 0.9f, 0.004f);  // 1 - 100 x 1e-3, to bfloat16's precision
}

TEST(MasterWeights, AdoptRefusesTensorsThatAreNotTheModulesAndLoadRestoresMasters) {
  torch::manual_seed(2);
  TinyNet net;
  MasterWeights masters(net, torch::kBFloat16);
  torch::Tensor stranger = torch::zeros({3}, torch::requires_grad());
  torch::optim::SGD sgd(std::vector<torch::Tensor>{stranger}, torch::optim::SGDOptions(0.1));
  const std::string m = test::error_of<ConfigError>([&] { masters.adopt(sgd); });
  EXPECT_TRUE(test::contains(m, "bf16-true")) << m;

  auto state = masters.parameters();
  auto buffers = masters.buffers();
  state.insert(state.end(), buffers.begin(), buffers.end());
  for (auto& [name, t] : state) {
    if (t.is_floating_point()) t = t + 1e-4;  // a change bfloat16 cannot show at these values
  }
  masters.load(state);
  EXPECT_TRUE(torch::equal(masters.parameters()[0].second, state[0].second));
  EXPECT_TRUE(torch::equal(net.fc->weight, state[0].second.to(torch::kBFloat16)));
}

TEST(MasterWeights, ShardedMastersStepTheShardsTheOptimizerAdopts) {
  // distributed.zero: 3: the masters become those of the shards (flat bfloat16 parts) and the
  // whole ones go; a shard that is not floating has none.
  TinyNet net;
  MasterWeights masters(net, torch::kBFloat16);
  std::vector<torch::Tensor> shards{torch::zeros({4}, torch::kBFloat16).requires_grad_(),
                                    torch::zeros({2}, torch::kInt64)};
  std::vector<torch::Tensor> wide{torch::full({4}, 1.0f + 1e-4f), torch::Tensor()};
  masters.shard(shards, wide);
  EXPECT_TRUE(masters.sharded());
  ASSERT_EQ(masters.shard_masters().size(), 2u);
  EXPECT_TRUE(masters.shard_masters()[0].requires_grad());
  EXPECT_FALSE(masters.shard_masters()[1].defined());
  torch::optim::SGD sgd(std::vector<torch::Tensor>{shards[0]}, torch::optim::SGDOptions(1e-4));
  masters.adopt(sgd);
  EXPECT_TRUE(sgd.param_groups()[0].params()[0].is_same(masters.shard_masters()[0]));
  shards[0].mutable_grad() = torch::ones({4}, torch::kBFloat16);
  masters.gradients_to_masters();
  sgd.step();
  masters.masters_to_model();
  // The master moved by 1e-4 (float32 keeps it); the shard is the master rounded.
  EXPECT_FLOAT_EQ(masters.shard_masters()[0][0].item<float>(), 1.0f);
  EXPECT_TRUE(torch::equal(shards[0], masters.shard_masters()[0].to(torch::kBFloat16)));
}

TEST(Precision, AnOverflowOnAnyRankSkipsTheStepOfEveryRank) {
  // fp16-mixed with distributed.zero: 3: each rank checks its own part of the gradients; the
  // finding of any rank is every rank's.
  TinyNet net;
  auto precision = Precision::loss_scaling_only(net);
  const float scale = precision->scaler()->scale();
  std::vector<torch::Tensor> params;
  for (auto& p : net.parameters()) {
    p.mutable_grad() = torch::ones_like(p);
    params.push_back(p);
  }
  bool asked_with = true;
  EXPECT_TRUE(precision->unscale_and_check(params, [&](bool mine) {
    asked_with = mine;
    return true;  // another rank found an inf
  }));
  EXPECT_FALSE(asked_with);  // this rank's gradients are finite
  precision->finish_step(false);
  EXPECT_LT(precision->scaler()->scale(), scale);  // backed off as for an overflow of its own
  for (auto& p : params) p.mutable_grad() = torch::ones_like(p);
  EXPECT_FALSE(precision->unscale_and_check(params, [](bool mine) { return mine; }));
}

TEST(Precision, Fp16MixedOnTheCpuIsRefusedNamingTheKeyAndTheWayOut) {
  TinyNet net;
  const std::string m =
      test::error_of<ConfigError>([&] { Precision p(PrecisionMode::Fp16Mixed, net); });
  EXPECT_TRUE(test::contains(m, "train.precision")) << m;
  EXPECT_TRUE(test::contains(m, "CUDA")) << m;
  EXPECT_TRUE(test::contains(m, "bf16-mixed")) << m;
  // Scaling alone (a model with its own float16 forward) works anywhere.
  EXPECT_NE(Precision::loss_scaling_only(net)->scaler(), nullptr);
}

TEST(Precision, Bf16TrueCastsFloatingInputsOnly) {
  TinyNet net;
  Precision p(PrecisionMode::Bf16True, net);
  Batch b{{"x", torch::randn({2, 2})}, {"y", torch::tensor({1, 0})}};
  Batch in = p.inputs(b);
  EXPECT_EQ(in.at("x").scalar_type(), torch::kBFloat16);
  EXPECT_EQ(in.at("y").scalar_type(), torch::kLong);
  Precision fp32(PrecisionMode::Fp32, net);
  EXPECT_FALSE(fp32.casts_inputs());
  EXPECT_EQ(fp32.scaler(), nullptr);
  EXPECT_EQ(fp32.masters(), nullptr);
}

}  // namespace
}  // namespace unitrain
