#include "unitrain/log/run_logger.h"

#include <unistd.h>

#include <algorithm>

namespace unitrain {

RunLogger::RunLogger(const LogOptions& options, const std::string& run_dir, int64_t keep_events)
    : events_(std::max<int64_t>(keep_events, 0)) {
  auto wants = [&](const char* name) {
    return std::find(options.trackers.begin(), options.trackers.end(), name) !=
           options.trackers.end();
  };
  if (wants("console")) {
    bool bar = options.progress_bar == "true" ||
               (options.progress_bar == "auto" && isatty(STDOUT_FILENO));
    auto console = std::make_unique<ConsoleTracker>(bar);
    console_ = console.get();
    trackers_.push_back(std::move(console));
  }
  if (!run_dir.empty() && wants("jsonl")) trackers_.push_back(make_jsonl_tracker(run_dir + "/metrics.jsonl", keep_events));
  if (!run_dir.empty() && wants("csv")) trackers_.push_back(make_csv_tracker(run_dir + "/metrics.csv", keep_events));
}

void RunLogger::log(const LogEvent& event) {
  ++events_;
  for (auto& t : trackers_) t->log(event);
}

void RunLogger::progress(int64_t step, int64_t total_steps, int64_t epoch, double running_loss) {
  if (console_) console_->progress(step, total_steps, epoch, running_loss);
}

void RunLogger::finish() {
  if (console_) console_->finish();
  for (auto& t : trackers_) t->flush();
}

}  // namespace unitrain
