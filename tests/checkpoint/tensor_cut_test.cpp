// A tensor-parallel model's checkpoint tensors whole: gathered where written, cut where read —
// its values and its optimizer's per-parameter state.
#include "unitrain/checkpoint/tensor_cut.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "parallel/run_ranks.h"
#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/compat/optimizer_state_key.h"
#include "unitrain/optim/optimizer.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {
namespace {

TEST(TensorCut, CutTensorsAreMadeWholeAndCutAgainTheOthersLeftAsTheyAre) {
  const auto full = torch::arange(24, torch::kFloat32).view({4, 6});
  const auto bias = torch::ones({4});
  test::run_shared_ranks(2, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    TensorCut cut;
    cut.group = group;
    cut.splits["w"] = tp::Split{1, 1};
    NamedTensors named{{"w", full.clone()}, {"b", bias.clone()}};
    cut.cut(named);
    EXPECT_TRUE(named[0].second.equal(full.narrow(1, 3 * rank, 3)));
    EXPECT_TRUE(named[1].second.equal(bias));
    cut.make_whole(named);
    EXPECT_TRUE(named[0].second.equal(full));
  });
}

TEST(TensorCut, AnOptimizersStateIsSavedWholeAndLoadedCut) {
  register_builtin_optimizers();
  torch::manual_seed(1);
  const auto grad = torch::randn({4, 6});
  test::run_shared_ranks(2, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    TensorCut cut;
    cut.group = group;
    cut.splits["w"] = tp::Split{0, 1};
    cut.gathers = true;
    auto w = torch::zeros({2, 6}, torch::requires_grad());
    auto b = torch::zeros({3}, torch::requires_grad());
    const NamedTensors params{{"w", w}, {"b", b}};
    torch::optim::Adam adam({w, b});
    w.mutable_grad() = tp::part_of(grad, 0, rank, 2);
    b.mutable_grad() = torch::ones({3});
    adam.step();
    std::vector<char> bytes;
    {
      WholeOptimizerState whole(adam, params, cut);
      const auto& st = static_cast<const torch::optim::AdamParamState&>(
          *adam.state().at(optimizer_state_key(w)));
      EXPECT_EQ(st.exp_avg().sizes(), (std::vector<int64_t>{4, 6}));
      EXPECT_TRUE(st.exp_avg().allclose(grad * 0.1));
      bytes = save_optimizer_state(adam);
    }
    const auto& back =
        static_cast<const torch::optim::AdamParamState&>(*adam.state().at(optimizer_state_key(w)));
    EXPECT_EQ(back.exp_avg().sizes(), (std::vector<int64_t>{2, 6}));  // its part again
    // Read into another process's optimizer of the same plan: its part of the whole file.
    auto w2 = torch::zeros({2, 6}, torch::requires_grad());
    auto b2 = torch::zeros({3}, torch::requires_grad());
    torch::optim::Adam fresh({w2, b2});
    std::vector<OptimizerFile> files;
    files.push_back({bytes, "optimizer.pt"});
    load_cut_optimizer_state(fresh, {{"w", w2}, {"b", b2}}, cut, std::move(files));
    const auto& loaded = static_cast<const torch::optim::AdamParamState&>(
        *fresh.state().at(optimizer_state_key(w2)));
    EXPECT_TRUE(loaded.exp_avg().equal(back.exp_avg()));
    EXPECT_EQ(loaded.step(), 1);
    EXPECT_EQ(fresh.param_groups()[0].params()[0].unsafeGetTensorImpl(), w2.unsafeGetTensorImpl());
  });
}

}  // namespace
}  // namespace unitrain
