// Optimizer state in checkpoints: PyTorch's layout, every group option, bitwise continuation,
// older formats, snapshots taken while training goes on.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "state_io_fixture.h"
#include "test_util.h"
#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/compat/optimizer_state_key.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

using test::contains;
using test::error_of;

void expect_options_eq(const torch::optim::AdamOptions& got,
                       const torch::optim::AdamOptions& want) {
  EXPECT_EQ(got.lr(), want.lr());
  EXPECT_EQ(std::get<0>(got.betas()), std::get<0>(want.betas()));
  EXPECT_EQ(std::get<1>(got.betas()), std::get<1>(want.betas()));
  EXPECT_EQ(got.eps(), want.eps());
  EXPECT_EQ(got.weight_decay(), want.weight_decay());
  EXPECT_EQ(got.amsgrad(), want.amsgrad());
}

void expect_options_eq(const torch::optim::SGDOptions& got, const torch::optim::SGDOptions& want) {
  EXPECT_EQ(got.lr(), want.lr());
  EXPECT_EQ(got.momentum(), want.momentum());
  EXPECT_EQ(got.dampening(), want.dampening());
  EXPECT_EQ(got.weight_decay(), want.weight_decay());
  EXPECT_EQ(got.nesterov(), want.nesterov());
}

/// Two steps with `saved`, save, load into a fresh optimizer built with `other` on a copy of the
/// model: its options become `saved`'s and the next two steps match the original bitwise.
template <typename Opt, typename Options>
void expect_optimizer_round_trip(const Options& saved, const Options& other) {
  torch::manual_seed(1);
  Net a;
  Opt opt_a(a.parameters(), saved);
  train_step(a, opt_a, 11);
  train_step(a, opt_a, 12);
  const std::vector<char> state = save_optimizer_state(opt_a);

  torch::manual_seed(2);
  Net b;
  load_module_state(b, module_state(a, true), true, "model");
  Opt opt_b(b.parameters(), other);
  load_optimizer_state(opt_b, state, "optimizer.pt");
  expect_options_eq(static_cast<const Options&>(opt_b.param_groups()[0].options()), saved);
  EXPECT_EQ(opt_b.state().size(), opt_a.state().size());
  for (int seed : {13, 14}) {
    train_step(a, opt_a, seed);
    train_step(b, opt_b, seed);
  }
  expect_same_parameters(a, b);

  // Without the state (fresh optimizer, same options) the steps differ: the test can fail.
  Net c;
  load_module_state(c, module_state(b, true), true, "model");
  Opt fresh(c.parameters(), saved);
  Opt cont(b.parameters(), saved);
  load_optimizer_state(cont, save_optimizer_state(opt_b), "optimizer.pt");
  train_step(c, fresh, 15);
  train_step(b, cont, 15);
  EXPECT_FALSE(torch::equal(c.fc->weight, b.fc->weight));
}

TEST_F(StateIo, AdamStateRestoresGroupOptionsAndContinuesBitwise) {
  expect_optimizer_round_trip<torch::optim::Adam>(
      torch::optim::AdamOptions(0.01).betas({0.8, 0.95}).weight_decay(0.1).eps(1e-6),
      torch::optim::AdamOptions(0.5));
  expect_optimizer_round_trip<torch::optim::Adam>(torch::optim::AdamOptions(0.02).amsgrad(true),
                                                  torch::optim::AdamOptions(0.02));
}

TEST_F(StateIo, SgdStateRestoresGroupOptionsAndContinuesBitwise) {
  expect_optimizer_round_trip<torch::optim::SGD>(
      torch::optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.01),
      torch::optim::SGDOptions(1.0));
  expect_optimizer_round_trip<torch::optim::SGD>(
      torch::optim::SGDOptions(0.05).momentum(0.5).dampening(0.1),
      torch::optim::SGDOptions(0.3).momentum(0.99));
}

/// Save after two steps, load into an optimizer built with lr `other_lr`: the lr comes back and
/// the next two steps match bitwise.
template <typename Opt, typename Options>
void expect_state_and_lr_round_trip(const Options& saved, double other_lr) {
  torch::manual_seed(1);
  Net a;
  Opt opt_a(a.parameters(), saved);
  train_step(a, opt_a, 11);
  train_step(a, opt_a, 12);
  const std::vector<char> state = save_optimizer_state(opt_a);
  Net b;
  load_module_state(b, module_state(a, true), true, "model");
  Options other = saved;
  other.lr(other_lr);
  Opt opt_b(b.parameters(), other);
  load_optimizer_state(opt_b, state, "optimizer.pt");
  EXPECT_EQ(opt_b.param_groups()[0].options().get_lr(), saved.lr());
  EXPECT_EQ(opt_b.state().size(), opt_a.state().size());
  for (int seed : {13, 14}) {
    train_step(a, opt_a, seed);
    train_step(b, opt_b, seed);
  }
  expect_same_parameters(a, b);
}

TEST_F(StateIo, AdamwAdagradRmspropStatesContinueBitwise) {
  namespace o = torch::optim;
  expect_state_and_lr_round_trip<o::AdamW>(o::AdamWOptions(0.01).weight_decay(0.1), 0.5);
  expect_state_and_lr_round_trip<o::AdamW>(o::AdamWOptions(0.01).amsgrad(true), 0.5);
  expect_state_and_lr_round_trip<o::Adagrad>(o::AdagradOptions(0.05).lr_decay(0.01), 0.5);
  expect_state_and_lr_round_trip<o::RMSprop>(o::RMSpropOptions(0.01), 0.5);
  expect_state_and_lr_round_trip<o::RMSprop>(o::RMSpropOptions(0.01).momentum(0.9).centered(true),
                                             0.5);
}

TEST_F(StateIo, OptimizerStateIsADictPythonCanRead) {
  torch::manual_seed(1);
  Net a;
  torch::optim::Adam opt(a.parameters(), torch::optim::AdamOptions(0.01));
  train_step(a, opt, 11);
  auto d = torch::pickle_load(save_optimizer_state(opt)).toGenericDict();
  EXPECT_EQ(d.at("format").toInt(), 3);
  EXPECT_EQ(d.at("type").toStringRef(), "adam");
  // Group options read as PyTorch's optimizer.state_dict() shows them.
  auto group = d.at("groups").toList().get(0).toGenericDict();
  EXPECT_EQ(group.at(std::string("params")).toInt(), int64_t(a.parameters().size()));
  auto options = group.at(std::string("options")).toGenericDict();
  EXPECT_EQ(options.at(std::string("lr")).toDouble(), 0.01);
  EXPECT_EQ(options.at(std::string("eps")).toDouble(), 1e-8);
  EXPECT_FALSE(options.at(std::string("amsgrad")).toBool());
  const auto& betas = options.at(std::string("betas")).toTupleRef().elements();
  ASSERT_EQ(betas.size(), 2u);
  EXPECT_EQ(betas[0].toDouble(), 0.9);
  EXPECT_EQ(betas[1].toDouble(), 0.999);
  auto state = d.at("state").toGenericDict();
  ASSERT_EQ(state.size(), a.parameters().size());
  // Parameters are numbered in group order: 0 is fc.weight.
  auto first = state.at(std::string("0")).toGenericDict();
  EXPECT_EQ(first.at(std::string("step")).toInt(), 1);
  auto key = optimizer_state_key(a.fc->weight);
  const auto& live = static_cast<torch::optim::AdamParamState&>(*opt.state().at(key));
  EXPECT_TRUE(torch::equal(first.at(std::string("exp_avg")).toTensor(), live.exp_avg()));
}

TEST_F(StateIo, OptimizerStateWithAnotherShapeIsATrainErrorAndChangesNothing) {
  torch::manual_seed(1);
  Net a(4, 3), b(5, 3);
  torch::optim::Adam opt_a(a.parameters(), torch::optim::AdamOptions(0.01));
  train_step(a, opt_a, 11);
  torch::optim::Adam opt_b(b.parameters(), torch::optim::AdamOptions(0.02));
  const std::string m = error_of<TrainError>(
      [&] { load_optimizer_state(opt_b, save_optimizer_state(opt_a), "optimizer.pt"); });
  EXPECT_TRUE(contains(m, "optimizer.pt")) << m;
  EXPECT_TRUE(contains(m, "exp_avg")) << m;
  EXPECT_TRUE(opt_b.state().empty());
  EXPECT_EQ(opt_b.param_groups()[0].options().get_lr(), 0.02);
}

TEST_F(StateIo, OtherOptimizersTravelAsLibTorchArchives) {
  // LBFGS is not written field by field: its whole LibTorch archive goes in the dict.
  torch::manual_seed(4);
  auto target = torch::randn({6});
  auto make = [] { return torch::zeros({6}, torch::requires_grad()); };
  torch::Tensor x_a = make();
  torch::optim::LBFGS opt_a({x_a}, torch::optim::LBFGSOptions(0.5).history_size(3));
  auto closure_for = [&target](torch::Tensor& x, torch::optim::Optimizer& opt) {
    return [&x, &opt, &target] {
      opt.zero_grad();
      auto loss = (x - target).pow(4).sum();
      loss.backward();
      return loss;
    };
  };
  opt_a.step(closure_for(x_a, opt_a));
  auto d = torch::pickle_load(save_optimizer_state(opt_a)).toGenericDict();
  EXPECT_EQ(d.at("type").toStringRef(), "");
  EXPECT_TRUE(d.contains(std::string("archive")));

  torch::Tensor x_b = make();
  {
    torch::NoGradGuard no_grad;
    x_b.copy_(x_a);
  }
  torch::optim::LBFGS opt_b({x_b}, torch::optim::LBFGSOptions(0.5).history_size(3));
  load_optimizer_state(opt_b, save_optimizer_state(opt_a), "optimizer.pt");
  opt_a.step(closure_for(x_a, opt_a));
  opt_b.step(closure_for(x_b, opt_b));
  EXPECT_TRUE(torch::equal(x_a, x_b));
}

TEST_F(StateIo, OptimizerFilesOfFormatTwoStillLoad) {
  // Format 2: group options as a LibTorch archive in a uint8 tensor.
  torch::manual_seed(1);
  Net a;
  torch::optim::SGD opt_a(a.parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  train_step(a, opt_a, 11);
  auto d = torch::pickle_load(save_optimizer_state(opt_a)).toGenericDict();
  d.insert_or_assign(std::string("format"), int64_t(2));
  auto group = d.at("groups").toList().get(0).toGenericDict();
  torch::serialize::OutputArchive options;
  opt_a.param_groups()[0].options().serialize(options);
  std::vector<char> bytes;
  options.save_to([&bytes](const void* p, size_t n) {
    bytes.insert(bytes.end(), static_cast<const char*>(p), static_cast<const char*>(p) + n);
    return n;
  });
  group.insert_or_assign(
      std::string("options"),
      torch::from_blob(bytes.data(), {int64_t(bytes.size())}, torch::kUInt8).clone());

  Net b;
  load_module_state(b, module_state(a, true), true, "model");
  torch::optim::SGD opt_b(b.parameters(), torch::optim::SGDOptions(0.5));
  load_optimizer_state(opt_b, torch::pickle_save(d), "optimizer.pt");
  const auto& o = static_cast<const torch::optim::SGDOptions&>(opt_b.param_groups()[0].options());
  EXPECT_EQ(o.lr(), 0.05);
  EXPECT_EQ(o.momentum(), 0.9);
  train_step(a, opt_a, 12);
  train_step(b, opt_b, 12);
  expect_same_parameters(a, b);
}

TEST_F(StateIo, OptimizerFilesOfTheFirstFormatStillLoad) {
  // Format 1: LibTorch's optimizer archive under "optimizer", group options beside it.
  torch::manual_seed(1);
  Net a;
  torch::optim::Adam opt_a(a.parameters(), torch::optim::AdamOptions(0.01));
  train_step(a, opt_a, 11);
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive state(archive.compilation_unit());
  opt_a.save(state);
  archive.write("optimizer", state);
  archive.write("groups/size", torch::tensor(int64_t(1)));
  torch::serialize::OutputArchive options(archive.compilation_unit());
  opt_a.param_groups()[0].options().serialize(options);
  archive.write("groups/0", options);
  std::vector<char> legacy;
  archive.save_to([&legacy](const void* p, size_t n) {
    legacy.insert(legacy.end(), static_cast<const char*>(p), static_cast<const char*>(p) + n);
    return n;
  });

  Net b;
  load_module_state(b, module_state(a, true), true, "model");
  torch::optim::Adam opt_b(b.parameters(), torch::optim::AdamOptions(0.5));
  load_optimizer_state(opt_b, legacy, "optimizer.pt");
  EXPECT_EQ(opt_b.param_groups()[0].options().get_lr(), 0.01);
  train_step(a, opt_a, 12);
  train_step(b, opt_b, 12);
  expect_same_parameters(a, b);
}

TEST_F(StateIo, DetachedOptimizerSnapshotIsTheStateAtSnapshotTime) {
  torch::manual_seed(1);
  Net a;
  torch::optim::Adam opt_a(a.parameters(), torch::optim::AdamOptions(0.01));
  train_step(a, opt_a, 11);
  const NamedTensors model_then = module_state(a, true);
  const std::vector<char> reference = save_optimizer_state(opt_a);
  auto snapshot = optimizer_state_snapshot(opt_a, /*copy=*/true);
  train_step(a, opt_a, 12);  // changes the live state after the snapshot
  train_step(a, opt_a, 13);
  const std::vector<char> later = snapshot().bytes();

  Net b, c;
  load_module_state(b, model_then, true, "model");
  load_module_state(c, model_then, true, "model");
  torch::optim::Adam opt_b(b.parameters(), torch::optim::AdamOptions(0.01));
  torch::optim::Adam opt_c(c.parameters(), torch::optim::AdamOptions(0.01));
  load_optimizer_state(opt_b, later, "snapshot");
  load_optimizer_state(opt_c, reference, "reference");
  train_step(b, opt_b, 12);
  train_step(c, opt_c, 12);
  expect_same_parameters(b, c);
  // The original optimizer went on from its own state.
  train_step(b, opt_b, 13);
  expect_same_parameters(a, b);
}

TEST_F(StateIo, OptimizerStateOfAnotherTypeIsATrainError) {
  Net a, b;
  torch::optim::SGD sgd(a.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  train_step(a, sgd, 11);
  torch::optim::Adam adam(b.parameters(), torch::optim::AdamOptions(0.1));
  const std::string m = error_of<TrainError>(
      [&] { load_optimizer_state(adam, save_optimizer_state(sgd), "optimizer.pt"); });
  EXPECT_TRUE(contains(m, "optimizer.pt")) << m;

  // Another number of parameter groups.
  torch::optim::Adam two_groups(
      std::vector<torch::optim::OptimizerParamGroup>{
          torch::optim::OptimizerParamGroup(b.fc->parameters()),
          torch::optim::OptimizerParamGroup(b.bn->parameters())},
      torch::optim::AdamOptions(0.1));
  const std::string g = error_of<TrainError>(
      [&] { load_optimizer_state(two_groups, save_optimizer_state(adam), "opt.pt"); });
  EXPECT_TRUE(contains(g, "opt.pt")) << g;
  EXPECT_TRUE(contains(g, "1 parameter groups")) << g;

  EXPECT_TRUE(contains(
      error_of<TrainError>([&] { load_optimizer_state(adam, as_bytes("junk"), "j.pt"); }), "j.pt"));
}

}  // namespace
}  // namespace unitrain
