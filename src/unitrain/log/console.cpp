#include "unitrain/log/console.h"

#include <spdlog/details/file_helper.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <mutex>
#include <vector>

namespace unitrain::log {
namespace {

/// The line prefix of this process ("[rank 1] "), shared by both sinks.
std::mutex g_prefix_mu;
std::string g_prefix;

/// The last line said, when it was an error: the same failure said by the Trainer (into
/// train.log, for any program) and right after by the command that called it is said once.
/// Records `error` (null: a line that is not one); true when it is the error said last.
bool said_last(const std::string* error) {
  static std::mutex mu;
  static std::string last;
  std::lock_guard<std::mutex> lock(mu);
  if (error == nullptr) {
    last.clear();
    return false;
  }
  if (*error == last) return true;
  last = *error;
  return false;
}

std::string prefix() {
  std::lock_guard<std::mutex> lock(g_prefix_mu);
  return g_prefix;
}

/// The console: the message alone ("warning: " / "error: " before those levels), after the
/// progress bar, if any, is cleared.
class ConsoleSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void set_before_print(void (*hook)()) {
    std::lock_guard<std::mutex> lock(mutex_);
    before_print_ = hook;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (before_print_) before_print_();
    const char* tag = msg.level == spdlog::level::warn  ? "warning: "
                      : msg.level >= spdlog::level::err ? "error: "
                                                        : "";
    const std::string line = fmt::format("{}{}{}\n", tag, prefix(),
                                         fmt::string_view(msg.payload.data(), msg.payload.size()));
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }

 private:
  void (*before_print_)() = nullptr;
};

/// train.log: timestamped lines. Until a file is opened the lines are kept (up to kBacklog),
/// so the file starts with what happened before the run folder existed (data, model, warnings).
class RunFileSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  RunFileSink() {
    set_formatter_(std::make_unique<spdlog::pattern_formatter>("[%Y-%m-%d %H:%M:%S.%e] [%l] %v"));
  }
  void open(const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex_);
    file_.close();
    file_.open(path, /*truncate=*/false);
    for (const auto& line : backlog_) file_.write(line);
    file_.flush();
    backlog_.clear();
    opened_ = true;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string text = prefix() + std::string(msg.payload.data(), msg.payload.size());
    spdlog::details::log_msg with_prefix(msg.time, msg.source, msg.logger_name, msg.level, text);
    spdlog::memory_buf_t line;
    formatter_->format(with_prefix, line);
    if (opened_) {
      file_.write(line);
      file_.flush();
    } else if (backlog_.size() < kBacklog) {
      backlog_.push_back(std::move(line));
    }
  }
  void flush_() override {
    if (opened_) file_.flush();
  }

 private:
  static constexpr size_t kBacklog = 10000;
  spdlog::details::file_helper file_;
  std::vector<spdlog::memory_buf_t> backlog_;
  bool opened_ = false;
};

struct State {
  std::shared_ptr<ConsoleSink> console = std::make_shared<ConsoleSink>();
  std::shared_ptr<RunFileSink> file = std::make_shared<RunFileSink>();
  std::shared_ptr<spdlog::logger> both;
  std::shared_ptr<spdlog::logger> file_only;
  std::shared_ptr<spdlog::logger> console_only;
  std::mutex filed_mu;
  std::string filed;  ///< the error error_in_file wrote last (its caller says it on the console)
};

State& state() {
  static State* s = [] {
    auto* st = new State();
    st->both = std::make_shared<spdlog::logger>("unitrain",
                                                spdlog::sinks_init_list{st->console, st->file});
    st->file_only = std::make_shared<spdlog::logger>("unitrain-file", st->file);
    st->console_only = std::make_shared<spdlog::logger>("unitrain-console", st->console);
    st->console_only->flush_on(spdlog::level::trace);
    st->both->flush_on(spdlog::level::trace);  // lines reach pipes and train.log at once
    st->file_only->flush_on(spdlog::level::trace);
    // Every part of unitrain that logs through spdlog directly (spdlog::info) lands here too:
    // one format on the console, one in train.log.
    spdlog::set_default_logger(st->both);
    return st;
  }();
  return *s;
}

// Installed when the library loads, before any component logs.
const bool g_installed = (state(), true);

}  // namespace

void add_file(const std::string& path) { state().file->open(path); }

void set_prefix(const std::string& p) {
  std::lock_guard<std::mutex> lock(g_prefix_mu);
  g_prefix = p;
}

void console_warnings_only() { state().console->set_level(spdlog::level::warn); }

void info(const std::string& message) {
  said_last(nullptr);
  state().both->info("{}", message);
}
void warn(const std::string& message) {
  said_last(nullptr);
  state().both->warn("{}", message);
}
void error(const std::string& message) {
  if (said_last(&message)) return;
  State& st = state();
  {
    std::lock_guard<std::mutex> lock(st.filed_mu);
    if (message == st.filed) {  // in train.log already (error_in_file): the console's turn
      st.filed.clear();
      st.console_only->error("{}", message);
      return;
    }
  }
  st.both->error("{}", message);
}
void error_in_file(const std::string& message) {
  State& st = state();
  {
    std::lock_guard<std::mutex> lock(st.filed_mu);
    st.filed = message;
  }
  said_last(nullptr);
  st.file_only->error("{}", message);
}
void file_only(const std::string& message) { state().file_only->info("{}", message); }

void set_before_print(void (*hook)()) { state().console->set_before_print(hook); }

void flush() { state().both->flush(); }

}  // namespace unitrain::log
