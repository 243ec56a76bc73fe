#include "unitrain/checkpoint/optimizer_state.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_util.h"
#include "unitrain/compat/optimizer_state_key.h"
#include "unitrain/core/error.h"
#include "unitrain/core/optimizer_state_serializer.h"

namespace unitrain {
namespace {

// An optimizer LibTorch does not have, to show that one registration is all a new optimizer
// needs for its state to travel in PyTorch's layout (checkpoint/ knows nothing of it).
struct NudgeOptions : torch::optim::OptimizerCloneableOptions<NudgeOptions> {
  explicit NudgeOptions(double lr = 0.1) : lr_(lr) {}
  TORCH_ARG(double, lr);
  TORCH_ARG(double, decay) = 0.5;

 public:
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct NudgeState : torch::optim::OptimizerCloneableParamState<NudgeState> {
  TORCH_ARG(int64_t, step) = 0;
  TORCH_ARG(torch::Tensor, velocity);
};

/// v = decay * v + grad; p -= lr * v.
class Nudge : public torch::optim::Optimizer {
 public:
  Nudge(std::vector<torch::Tensor> params, const NudgeOptions& options)
      : Optimizer({torch::optim::OptimizerParamGroup(std::move(params))},
                  std::make_unique<NudgeOptions>(options)) {}

  torch::Tensor step(LossClosure = nullptr) override {
    torch::NoGradGuard no_grad;
    for (auto& group : param_groups_) {
      const auto& o = static_cast<const NudgeOptions&>(group.options());
      for (auto& p : group.params()) {
        if (!p.grad().defined()) continue;
        auto& slot = state_[optimizer_state_key(p)];
        if (!slot) slot = std::make_unique<NudgeState>(NudgeState().velocity(torch::zeros_like(p)));
        auto& s = static_cast<NudgeState&>(*slot);
        s.step(s.step() + 1);
        s.velocity().mul_(o.decay()).add_(p.grad());
        p.sub_(s.velocity() * o.lr());
      }
    }
    return {};
  }
};

void register_nudge_state() {
  static const bool registered = [] {
    register_optimizer_state<Nudge, NudgeState, NudgeOptions>(
        "nudge",
        [](auto& s, auto& io) {
          io.integer("step", s.step());
          io.tensor("velocity", s.velocity());
        },
        [](auto& o, auto& io) {
          io.real("lr", o.lr());
          io.real("decay", o.decay());
        });
    return true;
  }();
  (void)registered;
}

void nudge_step(torch::Tensor& w, Nudge& opt, double target) {
  opt.zero_grad();
  (w - target).square().sum().backward();
  opt.step();
}

TEST(OptimizerStateSerializer, ARegisteredOptimizerTravelsInPyTorchsLayoutAndResumesBitwise) {
  register_nudge_state();
  torch::Tensor w = torch::tensor({1.0, -2.0, 3.0}).requires_grad_();
  Nudge opt({w}, NudgeOptions(0.05).decay(0.9));
  nudge_step(w, opt, 0.5);
  nudge_step(w, opt, 0.25);
  const std::vector<char> bytes = save_optimizer_state(opt);

  auto d = torch::pickle_load(bytes).toGenericDict();
  EXPECT_EQ(d.at("type").toStringRef(), "nudge");
  auto options = d.at("groups").toList().get(0).toGenericDict().at("options").toGenericDict();
  EXPECT_DOUBLE_EQ(options.at("lr").toDouble(), 0.05);
  EXPECT_DOUBLE_EQ(options.at("decay").toDouble(), 0.9);
  auto state = d.at("state").toGenericDict().at("0").toGenericDict();
  EXPECT_EQ(state.at("step").toInt(), 2);
  EXPECT_EQ(state.at("velocity").toTensor().sizes(), w.sizes());

  torch::Tensor w2 = w.detach().clone().requires_grad_();
  Nudge resumed({w2}, NudgeOptions(1.0));
  load_optimizer_state(resumed, bytes, "optimizer.pt");
  EXPECT_DOUBLE_EQ(static_cast<const NudgeOptions&>(resumed.param_groups()[0].options()).decay(),
                   0.9);
  nudge_step(w, opt, 0.125);
  nudge_step(w2, resumed, 0.125);
  EXPECT_TRUE(torch::equal(w, w2));
}

TEST(OptimizerStateSerializer, ATypeRegisteredTwiceIsAnError) {
  register_nudge_state();
  EXPECT_THROW((register_optimizer_state<Nudge, NudgeState, NudgeOptions>(
                   "nudge", [](auto&, auto&) {}, [](auto&, auto&) {})),
               TrainError);
}

TEST(OptimizerStateSerializer, AMissingEntryNamesTheFileTheTypeAndTheEntry) {
  register_nudge_state();
  torch::Tensor w = torch::ones({2}).requires_grad_();
  Nudge opt({w}, NudgeOptions());
  nudge_step(w, opt, 0.0);
  auto d = torch::pickle_load(save_optimizer_state(opt)).toGenericDict();
  ASSERT_EQ(d.at("state").toGenericDict().at("0").toGenericDict().erase("velocity"), 1u);
  const std::string msg = test::error_of<TrainError>(
      [&] { load_optimizer_state(opt, torch::pickle_save(d), "optimizer.pt"); });
  EXPECT_TRUE(test::contains(msg, "optimizer.pt: a parameter's nudge state has no 'velocity'"))
      << msg;
}

}  // namespace
}  // namespace unitrain
