#pragma once
// CallbackList: the Trainer's callbacks, called hook by hook; a callback that throws is named.
#include <exception>
#include <memory>
#include <vector>

#include "unitrain/engine/callback.h"

namespace unitrain {

/// The callbacks of a Trainer, in the order they were added. call() runs one hook of each; a
/// callback that throws ends the run with an error naming it and the hook (a ConfigError stays
/// one, anything else becomes a TrainError), and on_exception() then skips it.
/// A list made without a Trainer holds no callbacks (hooks take the Trainer they observe): the
/// engine's parts run with one where no Trainer drives them (their unit tests).
class CallbackList {
 public:
  CallbackList() = default;
  explicit CallbackList(Trainer& trainer) : trainer_(&trainer) {}

  void add(std::shared_ptr<Callback> callback);
  bool empty() const { return list_.empty(); }
  const std::vector<std::shared_ptr<Callback>>& all() const { return list_; }
  /// Whether any callback reads the numbers of each step (Callback::reads_step_values()).
  bool reads_step_values() const;
  /// The first callback that takes hooks from inside the optimizer step
  /// (Callback::hooks_inside_step()); null when none does.
  const Callback* hooking_inside_step() const;

  /// `hooks.call("on_step_end", &Callback::on_step_end, metrics)`.
  template <typename... Params, typename... Args>
  void call(const char* hook, void (Callback::*fn)(Trainer&, Params...), Args&&... args) {
    for (const auto& c : list_) {
      try {
        ((*c).*fn)(*trainer_, args...);
      } catch (...) {
        rethrow_named(*c, hook);
      }
    }
  }

  /// Every callback's on_exception but the one that threw (when one did); their own errors are
  /// logged and ignored.
  void on_exception(const std::exception& error) noexcept;

 private:
  [[noreturn]] void rethrow_named(const Callback& c, const char* hook);
  Trainer* trainer_ = nullptr;
  std::vector<std::shared_ptr<Callback>> list_;
  const Callback* failed_ = nullptr;
};

}  // namespace unitrain
