#include "unitrain/log/console.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <mutex>

namespace unitrain::log {
namespace {

struct State {
  std::mutex mu;
  std::shared_ptr<spdlog::logger> console;
  std::shared_ptr<spdlog::logger> file;
  std::string prefix;
  void (*before_print)() = nullptr;
};

State& state() {
  static State* s = [] {
    auto* st = new State();
    st->console = std::make_shared<spdlog::logger>(
        "unitrain", std::make_shared<spdlog::sinks::stdout_sink_mt>());
    st->console->set_pattern("%v");
    return st;
  }();
  return *s;
}

void write(spdlog::level::level_enum level, const std::string& message, bool console) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  std::string text = s.prefix + message;
  if (console) {
    if (s.before_print) s.before_print();
    const char* tag = level == spdlog::level::warn ? "warning: " : level == spdlog::level::err ? "error: " : "";
    s.console->log(level, "{}{}", tag, text);
    s.console->flush();
  }
  if (s.file) s.file->log(level, "{}", text);
}

}  // namespace

void add_file(const std::string& path) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.file = std::make_shared<spdlog::logger>(
      "unitrain-file", std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, false));
  s.file->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
  s.file->flush_on(spdlog::level::info);
}

void set_prefix(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().prefix = prefix;
}

void console_warnings_only() {
  std::lock_guard<std::mutex> lock(state().mu);
  state().console->set_level(spdlog::level::warn);
}

void info(const std::string& message) { write(spdlog::level::info, message, true); }
void warn(const std::string& message) { write(spdlog::level::warn, message, true); }
void error(const std::string& message) { write(spdlog::level::err, message, true); }
void file_only(const std::string& message) { write(spdlog::level::info, message, false); }

void set_before_print(void (*hook)()) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().before_print = hook;
}

void flush() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.console->flush();
  if (s.file) s.file->flush();
}

}  // namespace unitrain::log
