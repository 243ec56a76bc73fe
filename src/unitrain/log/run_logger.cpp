#include "unitrain/log/run_logger.h"

#include <algorithm>
#include <filesystem>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

RunInfo run_info_for_dir(const std::string& run_dir, int64_t keep_events) {
  RunInfo run;
  run.run_dir = run_dir;
  run.dir = run_dir;
  run.keep_events = keep_events;
  return run;
}

}  // namespace

RunLogger::RunLogger(const LogOptions& options, const RunInfo& run)
    : run_(run), events_(std::max<int64_t>(run.keep_events, 0)) {
  for (const std::string& name : options.trackers) {
    // LogOptions::from_config fills in every listed tracker's settings; a LogOptions made in
    // code may leave them out: the tracker's defaults then.
    auto given = options.tracker_args.find(name);
    const Config args = given != options.tracker_args.end()
                            ? given->second
                            : catalog::find(tracker_registry().kind(), name, "log.trackers")
                                  .args->resolve(Config(YAML::Node(YAML::NodeType::Map),
                                                        "log.tracker_args." + name));
    trackers_.push_back(tracker_registry().create_named(name, args, "log.trackers", options));
  }
  if (!run.dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(run.dir, ec);
    UT_CHECK_TRAIN(!ec, "cannot create ", run.dir, ": ", ec.message());
  }
  for (auto& t : trackers_) t->start(run);
}

RunLogger::RunLogger(const LogOptions& options, const std::string& run_dir, int64_t keep_events)
    : RunLogger(options, run_info_for_dir(run_dir, keep_events)) {}

void RunLogger::log(const LogEvent& event) {
  ++events_;
  for (const auto& [k, v] : event.metrics) last_[k] = v;
  for (auto& t : trackers_) t->log(event);
}

void RunLogger::progress(int64_t step, int64_t total_steps, int64_t epoch, const LossReader& loss) {
  for (auto& t : trackers_) t->progress(step, total_steps, epoch, loss);
}

void RunLogger::rewind(int64_t keep_events, int64_t first_step) {
  run_.keep_events = std::max<int64_t>(keep_events, 0);
  run_.first_step = first_step;
  events_ = run_.keep_events;
  for (auto& t : trackers_) t->rewind(run_);
}

void RunLogger::finish(bool completed) {
  if (finished_) return;
  finished_ = true;
  RunEnd end;
  end.final_metrics = last_;
  end.completed = completed;
  for (auto& t : trackers_) {
    t->finish(end);
    t->flush();
  }
}

}  // namespace unitrain
