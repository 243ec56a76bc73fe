// A test plugin: the callback `stall_at` sleeps `args.ms` milliseconds once, when the training
// batch of optimizer step `args.step` starts (in on_train_batch_start, phase "forward"), on the
// rank `args.rank` (-1: every rank; the rank from the launcher's RANK), so that an integration
// test can make one rank stall outside the collectives (the watchdog's tests).
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "unitrain/engine/callback_registry.h"
#include "unitrain/engine/trainer.h"

namespace {

class StallAt : public unitrain::Callback {
 public:
  StallAt(int64_t step, int64_t ms, int64_t rank) : step_(step), pause_(ms), rank_(rank) {}
  std::string name() const override { return "stall_at"; }
  void on_train_batch_start(unitrain::Trainer& trainer, const unitrain::Batch&) override {
    if (done_ || trainer.state().step + 1 != step_) return;
    const char* env = std::getenv("RANK");
    if (rank_ >= 0 && (env ? std::atoll(env) : 0) != rank_) return;
    done_ = true;
    std::this_thread::sleep_for(pause_);
  }

 private:
  int64_t step_;
  std::chrono::milliseconds pause_;
  int64_t rank_;
  bool done_ = false;
};

const bool registered = [] {
  unitrain::Schema args;
  args.add("step", unitrain::Type::Int).min(1).required().help("the optimizer step to stall in");
  args.add("ms", unitrain::Type::Int).min(0).required().help("milliseconds to sleep, once");
  args.add("rank", unitrain::Type::Int).def("-1").help("the rank that stalls; -1: every rank");
  unitrain::callback_registry().add(
      "stall_at", "sleeps once at the start of a step's batch (test plugin)", args,
      [](const unitrain::Config& a) -> unitrain::CallbackPtr {
        return std::make_shared<StallAt>(a.get_int("step"), a.get_int("ms"), a.get_int("rank"));
      });
  return true;
}();

}  // namespace
