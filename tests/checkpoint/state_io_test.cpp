#include "unitrain/checkpoint/state_io.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

#include "state_io_fixture.h"
#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/core/unit_parts.h"

namespace unitrain {
namespace {

using test::contains;
using test::error_of;

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

TEST_F(StateIo, LoadModuleStateLeavesATensorGivenAsItselfAlone) {
  // A frozen base given as itself (with_frozen_parameters), its memory freed as a model built
  // in parts frees it: nothing is read from it.
  Net target;
  free_tensor_memory(target.fc->weight);
  NamedTensors given = module_state(target, /*copy=*/false);
  const torch::Tensor bias = target.fc->bias.detach().clone();
  for (auto& [name, t] : given) {
    if (name == "fc.bias") t = bias + 1;
  }
  const std::string summary = load_module_state(target, given, /*strict=*/true, "x");
  EXPECT_TRUE(contains(summary, "loaded 7 of 7")) << summary;
  EXPECT_TRUE(torch::equal(target.fc->bias, bias + 1));
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
  EXPECT_TRUE(contains(summary, "loaded 6 of 7 tensors from init.pt: bn.bias, ")) << summary;
  EXPECT_TRUE(contains(summary, "kept as initialised: fc.bias")) << summary;
  EXPECT_TRUE(contains(summary, "ignored: extra")) << summary;

  // None of the names fits: nothing would be loaded, an error that shows both sides' names.
  NamedTensors prefixed;
  for (const auto& [name, t] : module_state(source, true)) prefixed.emplace_back("m." + name, t);
  const std::string none =
      error_of<ConfigError>([&] { load_module_state(target, prefixed, false, "init.pt"); });
  EXPECT_TRUE(contains(none,
                       "init.pt does not fit the model: none of its 7 names is one of the "
                       "model's 7 (file: m.bn.bias, "))
      << none;
  EXPECT_TRUE(contains(none, "; model: bn.bias, ")) << none;

  // A shape mismatch is an error even when not strict, and names the tensor.
  state[0].second = torch::zeros({2, 2});
  const std::string m =
      error_of<ConfigError>([&] { load_module_state(target, state, false, "init.pt"); });
  EXPECT_TRUE(contains(m, "fc.weight")) << m;
  EXPECT_FALSE(contains(m, "fc.bias")) << m;  // missing names are not problems here
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
