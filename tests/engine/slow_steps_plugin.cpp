// A test plugin: the callback `slow_steps` sleeps `args.ms` milliseconds after each optimizer
// step (in on_step_end), so that an integration test can signal, kill or time a run in the
// middle of training (tests/integration/common.py's slow_steps() gives the command-line words).
// While the file `args.slower_while` exists, it sleeps `args.slower_ms` instead: a test that waits
// for something slow outside the run (a node's agent starting under load) holds the run's pace
// without making every run slow.
// Tests slow a run down through this callback, never through a hook read by production code.
#include <sys/stat.h>

#include <chrono>
#include <string>
#include <thread>

#include "unitrain/engine/callback_registry.h"

namespace {

class SlowSteps : public unitrain::Callback {
 public:
  SlowSteps(int64_t ms, std::string slower_while, int64_t slower_ms)
      : pause_(ms), slower_while_(std::move(slower_while)), slower_pause_(slower_ms) {}
  std::string name() const override { return "slow_steps"; }
  void on_step_end(unitrain::Trainer&, const unitrain::MetricMap&) override {
    struct stat st;
    bool slower = !slower_while_.empty() && ::stat(slower_while_.c_str(), &st) == 0;
    std::this_thread::sleep_for(slower ? slower_pause_ : pause_);
  }

 private:
  std::chrono::milliseconds pause_;
  std::string slower_while_;
  std::chrono::milliseconds slower_pause_;
};

const bool registered = [] {
  unitrain::Schema args;
  args.add("ms", unitrain::Type::Int)
      .min(0)
      .required()
      .help("milliseconds to sleep after each optimizer step");
  args.add("slower_while", unitrain::Type::String)
      .def("''")
      .help("a file: while it exists, each step sleeps slower_ms instead");
  args.add("slower_ms", unitrain::Type::Int)
      .def(int64_t{1000})
      .min(0)
      .help("milliseconds to sleep after each step while slower_while exists");
  unitrain::callback_registry().add("slow_steps", "sleeps after each optimizer step (test plugin)",
                                    args, [](const unitrain::Config& a) -> unitrain::CallbackPtr {
                                      return std::make_shared<SlowSteps>(
                                          a.get_int("ms"), a.get_string("slower_while"),
                                          a.get_int("slower_ms"));
                                    });
  return true;
}();

}  // namespace
