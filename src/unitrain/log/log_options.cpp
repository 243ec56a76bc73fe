#include "unitrain/log/log_options.h"

#include <algorithm>

#include "unitrain/core/error.h"
#include "unitrain/core/registry.h"
#include "unitrain/log/tracker.h"

namespace unitrain {
namespace {

/// The key of the listed trackers' settings, declared in LogOptions::declare.
const char* const kTrackerArgs = "tracker_args";

/// `log.tracker_args` (`given`) resolved: an entry for every tracker of `trackers` that has
/// settings (ConfigError for unknown or repeated names, and for settings of a tracker that is
/// not listed).
YAML::Node resolved_tracker_args(const Config& log_section,
                                 const std::vector<std::string>& trackers,
                                 const Config& given_args) {
  for (size_t i = 0; i < trackers.size(); ++i) {
    const std::string key = log_section.key_path("trackers") + "[" + std::to_string(i) + "]";
    catalog::find(tracker_registry().kind(), trackers[i], key);  // did-you-mean when unknown
    UT_CHECK(std::count(trackers.begin(), trackers.begin() + i, trackers[i]) == 0, key,
             ": tracker '", trackers[i], "' is listed twice; list each tracker once");
  }
  const YAML::Node& given = given_args.node();
  const std::string args_path = log_section.key_path(kTrackerArgs);
  UT_CHECK(given.IsMap(), args_path,
           ": expected a section of tracker settings by tracker name, "
           "e.g. {tensorboard: {hparams: [optimizer]}}");
  for (const auto& kv : given) {
    const std::string name = kv.first.as<std::string>();
    if (std::find(trackers.begin(), trackers.end(), name) != trackers.end()) continue;
    std::string hint = closest_match(name, trackers);
    throw ConfigError(detail::concat(
        args_path, ".", name, ": settings of a tracker that ", log_section.key_path("trackers"),
        " does not list", hint.empty() ? "" : " (did you mean '" + hint + "'?)", "; add '", name,
        "' to ", log_section.key_path("trackers"), " or remove its settings"));
  }
  YAML::Node out(YAML::NodeType::Map);
  for (const std::string& name : trackers) {
    const ComponentInfo& info = catalog::find(tracker_registry().kind(), name, args_path);
    if (info.args->fields().empty() && !given[name].IsDefined()) continue;  // nothing to set
    YAML::Node resolved(YAML::NodeType::Map);
    info.args->resolve_node(given[name], resolved, args_path + "." + name);
    out[name] = resolved;
  }
  return out;
}

}  // namespace

void LogOptions::declare(Options<LogOptions>& o) {
  o.field("trackers", &LogOptions::trackers)
      .help(
          "where log events go, by registered tracker name (unitrain list tracker): console "
          "lines, run_dir/metrics.jsonl, run_dir/metrics.csv, run_dir/tensorboard/ event "
          "files, or a plugin's");
  o.key(kTrackerArgs, Type::Any, &LogOptions::given_tracker_args)
      .def("{}")
      .help(
          "settings of the listed trackers: a tracker's arguments (its args in the tracker "
          "tables, unitrain list tracker) go under log.tracker_args.<name>, e.g. "
          "{tensorboard: {hparams: [optimizer, train]}}; checked and filled with defaults");
  o.field("progress_bar", &LogOptions::progress_bar)
      .choices({"auto", "true", "false"})
      .help("a progress bar with rate, ETA and running loss; auto = when stderr is a terminal");
  o.field("all_ranks", &LogOptions::all_ranks)
      .help(
          "data-parallel runs: every rank writes its own tracker files (rank 0 in run_dir, "
          "rank N in run_dir/logs/rank-N/) instead of rank 0 only; the other ranks' console "
          "lines go to their logs/train-rank-N.log");
  o.check([](LogOptions& out, const Config& c) {
    for (const auto& kv : resolved_tracker_args(c, out.trackers, out.given_tracker_args)) {
      const std::string name = kv.first.as<std::string>();
      out.tracker_args.emplace(name, Config(kv.second, c.key_path(kTrackerArgs) + "." + name));
    }
  });
}

void LogOptions::resolve_trackers(Config& log_section) {
  const LogOptions options = from_config(log_section);
  // In the order of `trackers`, as config.yaml shows them (tracker_args is sorted by name).
  YAML::Node resolved(YAML::NodeType::Map);
  for (const std::string& name : options.trackers) {
    const auto it = options.tracker_args.find(name);
    if (it != options.tracker_args.end()) resolved[name] = it->second.node();
  }
  log_section.node()[kTrackerArgs] = resolved;
  log_section.mark_read(kTrackerArgs);  // the run logger hands them to the trackers
}

RunInfo LogOptions::segment(std::string config_yaml, const std::string& run_dir, int rank,
                            int world, int64_t checkpoint_step, int64_t keep_events) const {
  RunInfo r;
  r.config_yaml = std::move(config_yaml);
  r.run_dir = run_dir;
  r.dir = rank_dir(run_dir, rank);
  r.rank = rank;
  r.world_size = world;
  r.first_step = checkpoint_step + 1;
  r.keep_events = keep_events;
  return r;
}

std::string LogOptions::rank_dir(const std::string& run_dir, int rank) const {
  if (run_dir.empty()) return "";
  if (rank == 0) return run_dir;
  return all_ranks ? run_dir + "/logs/rank-" + std::to_string(rank) : "";
}

LogOptions LogOptions::of_rank(int rank) const {
  LogOptions o = *this;
  if (rank != 0) {
    if (!o.all_ranks) o.trackers.clear();
    o.progress_bar = "false";
  }
  return o;
}

}  // namespace unitrain
