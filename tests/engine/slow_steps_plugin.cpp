// A test plugin: the callback `slow_steps` sleeps `args.ms` milliseconds after each optimizer
// step (in on_step_end), so that an integration test can signal, kill or time a run in the
// middle of training (tests/integration/common.py's slow_steps() gives the command-line words).
// Tests slow a run down through this callback, never through a hook read by production code.
#include <chrono>
#include <string>
#include <thread>

#include "unitrain/engine/callback_registry.h"

namespace {

class SlowSteps : public unitrain::Callback {
 public:
  explicit SlowSteps(int64_t ms) : pause_(ms) {}
  std::string name() const override { return "slow_steps"; }
  void on_step_end(unitrain::Trainer&, const unitrain::MetricMap&) override {
    std::this_thread::sleep_for(pause_);
  }

 private:
  std::chrono::milliseconds pause_;
};

const bool registered = [] {
  unitrain::Schema args;
  args.add("ms", unitrain::Type::Int)
      .min(0)
      .required()
      .help("milliseconds to sleep after each optimizer step");
  unitrain::callback_registry().add("slow_steps", "sleeps after each optimizer step (test plugin)",
                                    args, [](const unitrain::Config& a) -> unitrain::CallbackPtr {
                                      return std::make_shared<SlowSteps>(a.get_int("ms"));
                                    });
  return true;
}();

}  // namespace
