#pragma once
// The signals that can end a run with a checkpoint (checkpoint.on_signal), by name and number.
#include <array>
#include <optional>
#include <string>

namespace unitrain {

/// A signal `checkpoint.on_signal.signals` may name.
struct SaveSignal {
  int number;
  const char* name;  ///< "SIGUSR1"
};

/// Every signal checkpoint.on_signal may list, which `unitrain launch` forwards to its workers:
/// SIGTERM (preemptible VMs, schedulers' kill), SIGUSR1/SIGUSR2 (Slurm's `--signal`), SIGHUP,
/// SIGXCPU (schedulers' CPU-time limits). SIGINT is not among them: it always saves and exits
/// 130, and a second one exits at once.
const std::array<SaveSignal, 5>& save_signals();

/// The number of a signal of save_signals() named `name` ("SIGUSR1" or "USR1"), or nullopt.
std::optional<int> save_signal_number(const std::string& name);

/// "SIGINT", a save_signals() name, or "signal N".
std::string signal_name(int number);

}  // namespace unitrain
