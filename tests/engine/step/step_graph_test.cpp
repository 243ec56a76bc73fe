// train.cuda_graphs's refusals, each naming its key (the capture itself needs a GPU:
// tests/gpu/gpu_test.py; a Trainer's refusal on the CPU: trainer_test.cpp).
#include "unitrain/engine/step/step_graph.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/engine/callback.h"

namespace unitrain {
namespace {

GraphFacts capturable() {
  GraphFacts f;
  f.cuda = true;
  f.cuda_build = true;
  return f;
}

struct InsideHooks : Callback {
  std::string name() const override { return "mine"; }
};

TEST(StepGraph, ARunItCanCaptureHasNoRefusal) {
  EXPECT_EQ(step_graph_refusal(TrainOptions(), capturable()), "");
  GraphFacts bf16 = capturable();
  bf16.precision = PrecisionMode::Bf16Mixed;
  EXPECT_EQ(step_graph_refusal(TrainOptions(), bf16), "");
}

TEST(StepGraph, EachRefusalNamesWhatToChange) {
  const TrainOptions plain;
  auto refusal_with = [&](auto change, const TrainOptions& options = TrainOptions()) {
    GraphFacts f = capturable();
    change(f);
    return step_graph_refusal(options, f);
  };
  const InsideHooks hooks;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {refusal_with([](GraphFacts& f) { f.cuda = false; }), "trains on the CPU"},
      {refusal_with([](GraphFacts& f) { f.cuda_build = false; }), "built without CUDA"},
      {refusal_with([](GraphFacts& f) { f.world = 2; }), "runs 2 processes"},
      {refusal_with([](GraphFacts& f) { f.accumulation = 4; }), "train.accumulation_steps"},
      {refusal_with([](GraphFacts& f) { f.precision = PrecisionMode::Fp16Mixed; }),
       "train.precision is fp16-mixed"},
      {refusal_with([](GraphFacts& f) { f.precision = PrecisionMode::Bf16True; }),
       "train.precision is bf16-true"},
      {refusal_with([](GraphFacts& f) { f.manual = true; }), "manual optimization"},
      {refusal_with([](GraphFacts& f) { f.optimizer_refusal = "its optimizer uses amsgrad"; }),
       "amsgrad"},
      {refusal_with([&](GraphFacts& f) { f.hooking = &hooks; }), "callback 'mine' takes hooks"},
      {refusal_with([](GraphFacts& f) { f.short_batches = true; }), "data.loader.drop_last"},
      {refusal_with([](GraphFacts& f) { f.profiling = true; }), "profile.enabled"},
  };
  for (const auto& [why, key] : cases) {
    EXPECT_TRUE(test::contains(why, "train.cuda_graphs: true cannot capture")) << why;
    EXPECT_TRUE(test::contains(why, key)) << why;
    EXPECT_TRUE(test::contains(why, "set train.cuda_graphs: false")) << why;
  }
  TrainOptions skip, spikes;
  skip.on_nonfinite = OnNonFinite::Skip;
  spikes.divergence.spike_factor = 3.0;
  EXPECT_TRUE(test::contains(refusal_with([](GraphFacts&) {}, skip), "train.on_nonfinite"));
  EXPECT_TRUE(
      test::contains(refusal_with([](GraphFacts&) {}, spikes), "train.divergence.spike_factor"));
  // Several reasons are all named.
  const std::string both = refusal_with([](GraphFacts& f) {
    f.world = 2;
    f.profiling = true;
  });
  EXPECT_TRUE(test::contains(both, "2 processes") && test::contains(both, "profile.enabled"))
      << both;
}

}  // namespace
}  // namespace unitrain
