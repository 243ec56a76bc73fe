#include "unitrain/checkpoint/state_io.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

#include "test_util.h"
#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/core/error.h"
#include "unitrain/optim/optimizer.h"

namespace unitrain {
namespace {

using test::contains;
using test::error_of;

struct Net : torch::nn::Module {
  explicit Net(int64_t in = 4, int64_t out = 3) {
    fc = register_module("fc", torch::nn::Linear(in, out));
    bn = register_module("bn", torch::nn::BatchNorm1d(out));
  }
  torch::Tensor forward(const torch::Tensor& x) { return bn->forward(fc->forward(x)); }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};

std::vector<char> as_bytes(const std::string& s) { return {s.begin(), s.end()}; }

/// The optimizer files hold PyTorch's layout for the optimizers whose state serializers are
/// registered: the built-ins register theirs with their factories.
class StateIo : public ::testing::Test {
 protected:
  void SetUp() override { register_builtin_optimizers(); }
};

TEST_F(StateIo, TensorDictRoundTripKeepsNamesOrderValuesAndDtypes) {
  torch::manual_seed(3);
  NamedTensors in = {{"z.weight", torch::randn({3, 2})},
                     {"a.count", torch::tensor({int64_t(1) << 40, int64_t(-2), int64_t(3)})},
                     {"m.double", torch::tensor({1.0 / 3.0, 1e-300}, torch::kDouble)},
                     {"i32", torch::tensor({7, -8}, torch::kInt)},
                     {"flag", torch::tensor({true, false})},
                     {"scalar", torch::tensor(2.5f)},
                     {"view", torch::arange(12).view({3, 4}).t()}};
  const std::vector<char> saved = save_tensor_dict(in);
  // PyTorch's zip container, which Python's torch.load reads.
  ASSERT_GE(saved.size(), 4u);
  EXPECT_EQ(std::string(saved.begin(), saved.begin() + 4), std::string("PK\x03\x04", 4));
  NamedTensors out = load_tensor_dict(saved, "test");
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].first, in[i].first);
    EXPECT_EQ(out[i].second.scalar_type(), in[i].second.scalar_type()) << in[i].first;
    EXPECT_EQ(out[i].second.sizes(), in[i].second.sizes()) << in[i].first;
    EXPECT_TRUE(torch::equal(out[i].second, in[i].second)) << in[i].first;
  }
  EXPECT_EQ(out[1].second[0].item<int64_t>(), int64_t(1) << 40);
  EXPECT_EQ(out[2].second[0].item<double>(), 1.0 / 3.0);
  EXPECT_EQ(out[2].second[1].item<double>(), 1e-300);

  EXPECT_TRUE(load_tensor_dict(save_tensor_dict({}), "empty").empty());
}

TEST_F(StateIo, GarbageBytesAreATrainErrorNamingWhat) {
  std::string m =
      error_of<TrainError>([] { load_tensor_dict(as_bytes("not a pickle"), "weights.pt"); });
  EXPECT_TRUE(contains(m, "weights.pt")) << m;
  m = error_of<TrainError>([] { load_tensor_dict({}, "empty.pt"); });
  EXPECT_TRUE(contains(m, "empty.pt")) << m;
  // A truncated tensor file is as bad as garbage.
  std::vector<char> cut = save_tensor_dict({{"w", torch::ones({4, 4})}});
  cut.resize(cut.size() / 2);
  m = error_of<TrainError>([&] { load_tensor_dict(cut, "cut.pt"); });
  EXPECT_TRUE(contains(m, "cut.pt")) << m;
}

TEST_F(StateIo, PicklesThatAreNotADictOfTensorsAreATrainError) {
  std::string m = error_of<TrainError>(
      [] { load_tensor_dict(torch::pickle_save(torch::ones({2})), "tensor.pt"); });
  EXPECT_TRUE(contains(m, "tensor.pt")) << m;
  EXPECT_TRUE(contains(m, "dict")) << m;

  c10::Dict<std::string, int64_t> numbers;
  numbers.insert("epoch", 3);
  m = error_of<TrainError>([&] { load_tensor_dict(torch::pickle_save(numbers), "numbers.pt"); });
  EXPECT_TRUE(contains(m, "numbers.pt")) << m;
  EXPECT_TRUE(contains(m, "names to tensors")) << m;
}

TEST_F(StateIo, ModuleStateNamesAndCopies) {
  Net net;
  NamedTensors view = module_state(net, /*copy=*/false);
  NamedTensors copy = module_state(net, /*copy=*/true);
  std::vector<std::string> names;
  for (const auto& [n, t] : copy) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"fc.weight", "fc.bias", "bn.weight", "bn.bias",
                                             "bn.running_mean", "bn.running_var",
                                             "bn.num_batches_tracked"}));
  const torch::Tensor before = net.fc->weight.detach().clone();
  {
    torch::NoGradGuard g;
    net.fc->weight.fill_(5);
  }
  EXPECT_TRUE(torch::equal(copy[0].second, before));          // a snapshot
  EXPECT_TRUE(torch::equal(view[0].second, net.fc->weight));  // shares the parameter
  EXPECT_FALSE(copy[0].second.requires_grad());
}

TEST_F(StateIo, LoadModuleStateStrictCopiesEveryTensor) {
  torch::manual_seed(5);
  Net source;
  source.forward(torch::randn({6, 4}));  // running stats differ from a fresh module's
  Net target;
  const std::string summary =
      load_module_state(target, load_tensor_dict(save_tensor_dict(module_state(source, true)), "x"),
                        /*strict=*/true, "x.pt");
  EXPECT_TRUE(contains(summary, "loaded 7 of 7")) << summary;
  EXPECT_TRUE(torch::equal(target.fc->weight, source.fc->weight));
  EXPECT_TRUE(torch::equal(target.fc->bias, source.fc->bias));
  EXPECT_TRUE(torch::equal(target.bn->running_mean, source.bn->running_mean));
  EXPECT_TRUE(torch::equal(target.bn->running_var, source.bn->running_var));
  EXPECT_EQ(target.bn->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_TRUE(target.fc->weight.requires_grad());  // still a trainable parameter
}

TEST_F(StateIo, LoadModuleStateStrictListsMissingUnexpectedAndMismatched) {
  torch::manual_seed(6);
  Net source;
  NamedTensors state = module_state(source, true);
  Net target;
  const torch::Tensor weight_before = target.fc->weight.detach().clone();

  NamedTensors bad;
  for (const auto& [n, t] : state) {
    if (n == "fc.bias" || n == "bn.running_var") continue;             // missing
    bad.emplace_back(n, n == "fc.weight" ? torch::zeros({5, 5}) : t);  // mismatched shape
  }
  bad.emplace_back("head.weight", torch::zeros(2));  // unexpected
  bad.emplace_back("head.bias", torch::zeros(2));    // unexpected
  const std::string m =
      error_of<ConfigError>([&] { load_module_state(target, bad, true, "init.pt"); });
  for (const char* part :
       {"init.pt", "missing", "fc.bias", "bn.running_var", "unexpected", "head.weight", "head.bias",
        "mismatched", "fc.weight", "[5, 5]", "[3, 4]"}) {
    EXPECT_TRUE(contains(m, part)) << part << " not in: " << m;
  }
  // Nothing is copied when the state does not fit.
  EXPECT_TRUE(torch::equal(target.fc->weight, weight_before));

  // Each problem alone is enough.
  NamedTensors only_missing(state.begin(), state.end() - 1);
  EXPECT_TRUE(contains(
      error_of<ConfigError>([&] { load_module_state(target, only_missing, true, "a.pt"); }),
      "bn.num_batches_tracked"));
  NamedTensors only_extra = state;
  only_extra.emplace_back("extra", torch::zeros(1));
  EXPECT_TRUE(
      contains(error_of<ConfigError>([&] { load_module_state(target, only_extra, true, "b.pt"); }),
               "extra"));
  NamedTensors wrong_dtype = state;
  wrong_dtype[1].second = wrong_dtype[1].second.to(torch::kDouble);
  EXPECT_TRUE(
      contains(error_of<ConfigError>([&] { load_module_state(target, wrong_dtype, true, "c.pt"); }),
               "fc.bias"));
  EXPECT_TRUE(torch::equal(target.fc->weight, weight_before));
}

TEST_F(StateIo, LoadModuleStateNonStrictLoadsWhatMatchesAndReportsTheRest) {
  torch::manual_seed(7);
  Net source, target;
  NamedTensors state = module_state(source, true);
  state.erase(state.begin() + 1);                // fc.bias missing
  state.emplace_back("extra", torch::zeros(1));  // unexpected
  const torch::Tensor bias_before = target.fc->bias.detach().clone();
  ASSERT_FALSE(torch::equal(target.fc->weight, source.fc->weight));
  const std::string summary = load_module_state(target, state, false, "init.pt");
  EXPECT_TRUE(torch::equal(target.fc->weight, source.fc->weight));
  EXPECT_TRUE(torch::equal(target.bn->weight, source.bn->weight));
  EXPECT_TRUE(torch::equal(target.fc->bias, bias_before));
  EXPECT_TRUE(contains(summary, "loaded 6 of 7 tensors from init.pt")) << summary;
  EXPECT_TRUE(contains(summary, "kept as initialised: fc.bias")) << summary;
  EXPECT_TRUE(contains(summary, "ignored: extra")) << summary;

  // A shape mismatch is an error even when not strict, and names the tensor.
  state[0].second = torch::zeros({2, 2});
  const std::string m =
      error_of<ConfigError>([&] { load_module_state(target, state, false, "init.pt"); });
  EXPECT_TRUE(contains(m, "fc.weight")) << m;
  EXPECT_FALSE(contains(m, "fc.bias")) << m;  // missing names are not problems here
}

/// Trains `net` one step with `opt` on a fixed batch.
void train_step(Net& net, torch::optim::Optimizer& opt, int seed) {
  torch::manual_seed(seed);
  opt.zero_grad();
  net.forward(torch::randn({8, 4})).pow(2).mean().backward();
  opt.step();
}

void expect_same_parameters(Net& a, Net& b) {
  auto pa = a.named_parameters();
  auto pb = b.named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(torch::equal(pa[i].value(), pb[i].value())) << pa[i].key();
  }
}

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
  expect_state_and_lr_round_trip<o::RMSprop>(
      o::RMSpropOptions(0.01).momentum(0.9).centered(true), 0.5);
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
  auto key = c10::guts::to_string(a.fc->weight.unsafeGetTensorImpl());
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

TEST_F(StateIo, DeferredSnapshotBuffersCopyWhenTheQueueRuns) {
  torch::manual_seed(6);
  Net a;
  SnapshotBuffers buffers(/*defer=*/true);
  a.forward(torch::randn({8, 4}));  // batch-norm statistics move away from their initial values
  const torch::Tensor weight_then = a.fc->weight.detach().clone();
  const torch::Tensor mean_then = a.bn->running_mean.clone();
  NamedTensors snap = module_state(a, true, &buffers);
  auto copies = buffers.take_copies();
  ASSERT_TRUE(static_cast<bool>(copies));
  EXPECT_FALSE(static_cast<bool>(buffers.take_copies()));  // the queue was handed over
  // Module buffers were copied at once (a forward changes them); parameters wait for the queue.
  a.forward(torch::randn({8, 4}));
  std::map<std::string, torch::Tensor> by_name(snap.begin(), snap.end());
  EXPECT_TRUE(torch::equal(by_name.at("bn.running_mean"), mean_then));
  EXPECT_FALSE(torch::equal(a.bn->running_mean, mean_then));
  copies();
  EXPECT_TRUE(torch::equal(by_name.at("fc.weight"), weight_then));
  EXPECT_NE(by_name.at("fc.weight").data_ptr(), a.fc->weight.data_ptr());

  // The next snapshot reuses the same buffers.
  NamedTensors again = module_state(a, true, &buffers);
  buffers.take_copies()();
  std::map<std::string, torch::Tensor> again_by_name(again.begin(), again.end());
  EXPECT_EQ(again_by_name.at("fc.weight").data_ptr(), by_name.at("fc.weight").data_ptr());
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

TEST_F(StateIo, GradientStateRoundTrip) {
  torch::manual_seed(8);
  Net a;
  a.forward(torch::randn({4, 4})).pow(2).sum().backward();
  NamedTensors grads = gradient_state(a);
  std::vector<std::string> names;
  for (const auto& [n, g] : grads) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"fc.weight", "fc.bias", "bn.weight", "bn.bias"}));
  const torch::Tensor fc_grad = a.fc->weight.grad().clone();
  a.fc->weight.mutable_grad().add_(1);  // the state is a copy
  EXPECT_TRUE(torch::equal(grads[0].second, fc_grad));

  Net b;
  load_gradient_state(b, load_tensor_dict(save_tensor_dict(grads), "grads.pt"), "grads.pt");
  EXPECT_TRUE(torch::equal(b.fc->weight.grad(), fc_grad));
  EXPECT_TRUE(torch::equal(b.fc->bias.grad(), a.fc->bias.grad()));
  EXPECT_TRUE(torch::equal(b.bn->weight.grad(), a.bn->weight.grad()));
  EXPECT_TRUE(torch::equal(b.bn->bias.grad(), a.bn->bias.grad()));

  // Names not in the state lose their gradient.
  NamedTensors partial(grads.begin(), grads.begin() + 1);
  load_gradient_state(b, partial, "grads.pt");
  EXPECT_TRUE(b.fc->weight.grad().defined());
  EXPECT_FALSE(b.fc->bias.grad().defined());
  EXPECT_TRUE(gradient_state(Net()).empty());

  NamedTensors wrong = {{"fc.weight", torch::zeros({2, 2})}};
  const std::string m = error_of<TrainError>([&] { load_gradient_state(b, wrong, "g.pt"); });
  EXPECT_TRUE(contains(m, "g.pt")) << m;
  EXPECT_TRUE(contains(m, "fc.weight")) << m;
}

TEST_F(StateIo, RngStateRepeatsRandomNumbers) {
  torch::manual_seed(123);
  torch::rand({3});
  NamedTensors state = rng_state();
  ASSERT_FALSE(state.empty());
  EXPECT_EQ(state[0].first, "cpu");
  const torch::Tensor first = torch::rand({5});
  const torch::Tensor normal = torch::randn({4}, torch::kDouble);
  const int64_t integer = torch::randint(1 << 30, {1}).item<int64_t>();
  torch::manual_seed(999);
  torch::rand({7});
  load_rng_state(load_tensor_dict(save_tensor_dict(state), "rng.pt"), "rng.pt");
  EXPECT_TRUE(torch::equal(torch::rand({5}), first));
  EXPECT_TRUE(torch::equal(torch::randn({4}, torch::kDouble), normal));
  EXPECT_EQ(torch::randint(1 << 30, {1}).item<int64_t>(), integer);

  const std::string m = error_of<TrainError>([] {
    load_rng_state({{"tpu", torch::zeros(1)}}, "rng.pt");
  });
  EXPECT_TRUE(contains(m, "rng.pt")) << m;
  EXPECT_TRUE(contains(m, "tpu")) << m;
}

}  // namespace
}  // namespace unitrain
