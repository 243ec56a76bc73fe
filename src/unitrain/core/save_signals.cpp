#include "unitrain/core/save_signals.h"

#include <csignal>

namespace unitrain {

const std::array<SaveSignal, 5>& save_signals() {
  static const std::array<SaveSignal, 5> table{{{SIGTERM, "SIGTERM"},
                                                {SIGUSR1, "SIGUSR1"},
                                                {SIGUSR2, "SIGUSR2"},
                                                {SIGHUP, "SIGHUP"},
                                                {SIGXCPU, "SIGXCPU"}}};
  return table;
}

std::optional<int> save_signal_number(const std::string& name) {
  for (const SaveSignal& s : save_signals()) {
    if (name == s.name || "SIG" + name == s.name) return s.number;
  }
  return std::nullopt;
}

std::string signal_name(int number) {
  if (number == SIGINT) return "SIGINT";
  for (const SaveSignal& s : save_signals()) {
    if (s.number == number) return s.name;
  }
  return "signal " + std::to_string(number);
}

}  // namespace unitrain
