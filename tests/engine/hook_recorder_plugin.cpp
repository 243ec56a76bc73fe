// A test plugin: the callback `record_hooks` writes each hook it sees, one line each, to
// `<args.file>.rank-<rank>` (tests/integration/callbacks_test.py reads them), throws in the
// hook `args.fail_in` when set, and on rank `args.stop_rank` asks to stop in the hook
// `args.stop_in`.
#include <fstream>
#include <stdexcept>
#include <string>

#include "unitrain/engine/callback_registry.h"
#include "unitrain/engine/step/step_runner.h"
#include "unitrain/engine/trainer.h"

namespace {

using unitrain::Batch;
using unitrain::MetricMap;
using unitrain::Trainer;

class RecordHooks : public unitrain::Callback {
 public:
  RecordHooks(std::string file, std::string fail_in, std::string stop_in, int64_t stop_rank)
      : file_(std::move(file)),
        fail_in_(std::move(fail_in)),
        stop_in_(std::move(stop_in)),
        stop_rank_(stop_rank) {}
  std::string name() const override { return "record_hooks"; }

  void on_fit_start(Trainer& t) override { note(t, "fit_start"); }
  void on_train_start(Trainer& t) override { note(t, "train_start"); }
  void on_epoch_start(Trainer& t) override { note(t, "epoch_start"); }
  void on_epoch_end(Trainer& t) override { note(t, "epoch_end"); }
  void on_train_end(Trainer& t) override { note(t, "train_end"); }
  void on_fit_end(Trainer& t, const unitrain::FitResult&) override { note(t, "fit_end"); }
  void on_train_batch_start(Trainer& t, const Batch&) override { note(t, "train_batch_start"); }
  void on_before_backward(Trainer& t, const torch::Tensor&) override { note(t, "before_backward"); }
  void on_after_backward(Trainer& t) override { note(t, "after_backward"); }
  void on_before_gradient_sync(Trainer& t) override { note(t, "before_gradient_sync"); }
  void on_after_gradient_sync(Trainer& t) override { note(t, "after_gradient_sync"); }
  void on_before_clip(Trainer& t) override { note(t, "before_clip"); }
  void on_after_clip(Trainer& t, double norm) override {
    note(t, norm >= 0 ? "after_clip(norm)" : "after_clip(-1)");
  }
  void on_before_optimizer_step(Trainer& t, bool) override { note(t, "before_optimizer_step"); }
  void on_after_optimizer_step(Trainer& t, bool) override { note(t, "after_optimizer_step"); }
  void on_before_zero_grad(Trainer& t) override { note(t, "before_zero_grad"); }
  void on_after_zero_grad(Trainer& t) override { note(t, "after_zero_grad"); }
  void on_train_batch_end(Trainer& t, const Batch&, const unitrain::MicroStep&) override {
    note(t, "train_batch_end");
  }
  void on_step_end(Trainer& t, const MetricMap&) override { note(t, "step_end"); }
  void on_nonfinite(Trainer& t, const unitrain::NonFinite&) override { note(t, "nonfinite"); }
  void on_before_log(Trainer& t, MetricMap&) override { note(t, "before_log"); }
  void on_log(Trainer& t, const MetricMap&) override { note(t, "log"); }
  void on_validation_start(Trainer& t) override { note(t, "validation_start"); }
  void on_validation_batch_start(Trainer& t, const Batch&) override {
    note(t, "validation_batch_start");
  }
  void on_validation_batch_end(Trainer& t, const Batch&, const unitrain::StepOutput&) override {
    note(t, "validation_batch_end");
  }
  void on_validation_end(Trainer& t, const MetricMap&) override { note(t, "validation_end"); }
  void on_test_start(Trainer& t) override { note(t, "test_start"); }
  void on_test_batch_start(Trainer& t, const Batch&) override { note(t, "test_batch_start"); }
  void on_test_batch_end(Trainer& t, const Batch&, const unitrain::StepOutput&) override {
    note(t, "test_batch_end");
  }
  void on_test_end(Trainer& t, const MetricMap&) override { note(t, "test_end"); }
  void on_save_checkpoint(Trainer& t, unitrain::CheckpointEntries&) override {
    note(t, "save_checkpoint");
  }
  void on_load_checkpoint(Trainer& t, const unitrain::CheckpointEntries&) override {
    note(t, "load_checkpoint");
  }
  void on_exception(Trainer& t, const std::exception&) override { note(t, "exception"); }

 private:
  void note(Trainer& t, const char* hook) {
    if (!out_.is_open()) out_.open(file_ + ".rank-" + std::to_string(t.rank()), std::ios::app);
    out_ << hook << '\n' << std::flush;
    if (fail_in_ == hook) throw std::runtime_error(std::string("asked to fail in ") + hook);
    if (stop_in_ == hook && t.rank() == stop_rank_) t.request_stop();
  }
  std::string file_;
  std::string fail_in_, stop_in_;
  int64_t stop_rank_;
  std::ofstream out_;
};

const bool registered = [] {
  unitrain::Schema args;
  args.add("file", unitrain::Type::String).help("where the hooks go (.rank-<N> is appended)");
  args.add("fail_in", unitrain::Type::String).nullable().help("a hook to throw in, e.g. step_end");
  args.add("stop_in", unitrain::Type::String).nullable().help("a hook to ask to stop in");
  args.add("stop_rank", unitrain::Type::Int).def(0).help("the rank that asks");
  unitrain::callback_registry().add(
      "record_hooks", "writes each hook it sees to a file (test plugin)", args,
      [](const unitrain::Config& a) -> unitrain::CallbackPtr {
        auto text = [&a](const char* key) { return a.has(key) ? a.get_string(key) : ""; };
        return std::make_shared<RecordHooks>(a.get_string("file"), text("fail_in"), text("stop_in"),
                                             a.get_int("stop_rank"));
      });
  return true;
}();

}  // namespace
