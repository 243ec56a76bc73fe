#include "unitrain/log/tensorboard_tracker.h"

#include <fmt/format.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "unitrain/core/error.h"
#include "unitrain/core/host_name.h"
#include "unitrain/log/console.h"
#include "unitrain/log/tfrecord_writer.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;
using tensorboard::HParam;

double event_wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool is_bool_text(const std::string& s) {
  std::string l = s;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  return l == "true" || l == "false";
}

/// One scalar of the config as a hyperparameter: a plain (unquoted) number or bool as such.
HParam scalar_hparam(const std::string& name, const YAML::Node& node) {
  HParam h;
  h.name = name;
  h.text = node.Scalar();
  if (node.Tag() == "!") return h;  // quoted: a string
  if (is_bool_text(h.text)) {
    h.kind = HParam::Kind::Bool;
    h.flag = h.text[0] == 't' || h.text[0] == 'T';
    return h;
  }
  char* end = nullptr;
  const double v = std::strtod(h.text.c_str(), &end);
  if (!h.text.empty() && end == h.text.c_str() + h.text.size()) {
    h.kind = HParam::Kind::Number;
    h.number = v;
  }
  return h;
}

void flatten_hparams(const YAML::Node& node, const std::string& name, std::vector<HParam>& out) {
  if (!node.IsDefined() || node.IsNull()) return;
  if (node.IsScalar()) {
    out.push_back(scalar_hparam(name, node));
  } else if (node.IsMap()) {
    for (const auto& kv : node) flatten_hparams(kv.second, name + "." + kv.first.Scalar(), out);
  } else if (node.IsSequence()) {
    bool scalars = true;
    for (const auto& item : node) scalars = scalars && item.IsScalar();
    if (!scalars) {
      for (size_t i = 0; i < node.size(); ++i) {
        flatten_hparams(node[i], name + "." + std::to_string(i), out);
      }
      return;
    }
    YAML::Emitter flow;
    flow << YAML::Flow << node;
    HParam h;
    h.name = name;
    h.text = flow.c_str();
    out.push_back(h);
  }
}

/// The 10-digit seconds of an event file's name, or -1.
int64_t event_file_seconds(const std::string& name) {
  static const std::string prefix = "events.out.tfevents.";
  if (name.rfind(prefix, 0) != 0 || name.size() < prefix.size() + 10) return -1;
  const std::string digits = name.substr(prefix.size(), 10);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return -1;
  }
  return std::atoll(digits.c_str());
}

/// The config as Markdown: a code block (each line indented by four spaces).
std::string config_markdown(const std::string& yaml) {
  std::string out = "    ";
  for (char c : yaml) {
    out += c;
    if (c == '\n') out += "    ";
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out;
}

}  // namespace

void TensorBoardOptions::declare(Options<TensorBoardOptions>& o) {
  o.field("hparams", &TensorBoardOptions::hparams)
      .help(
          "config key paths whose values (and those of the sections below them) are the run's "
          "hyperparameters in TensorBoard's hparams dashboard; [] = none");
}

std::vector<HParam> config_hparams(const std::string& config_yaml,
                                   const std::vector<std::string>& key_paths,
                                   const std::string& key_paths_key) {
  const YAML::Node root = YAML::Load(config_yaml);
  std::vector<HParam> out;
  for (const std::string& path : key_paths) {
    YAML::Node node = root;
    std::vector<std::string> keys;  // the keys of the last section reached, for a suggestion
    bool found = true;
    for (size_t start = 0, dot = 0; found && dot != std::string::npos; start = dot + 1) {
      dot = path.find('.', start);
      const std::string part = path.substr(start, dot - start);
      keys.clear();
      if (node.IsMap()) {
        for (const auto& kv : node) keys.push_back(kv.first.Scalar());
      }
      const YAML::Node child = node.IsMap() ? std::as_const(node)[part] : YAML::Node();
      found = child.IsDefined();
      if (found) node.reset(child);
    }
    if (!found) {
      const std::string last =
          path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
      const std::string hint = closest_match(last, keys);
      log::warn(detail::concat(key_paths_key, ": '", path, "' is not a key of the config",
                               hint.empty() ? "" : " (did you mean '" + hint + "'?)",
                               "; its hyperparameters are left out"));
      continue;
    }
    flatten_hparams(node, path, out);
  }
  return out;
}

std::string new_event_file_name(const std::string& dir) {
  static std::atomic<int> counter{0};
  int64_t seconds = static_cast<int64_t>(event_wall_time());
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    seconds = std::max(seconds, event_file_seconds(entry.path().filename().string()) + 1);
  }
  return fmt::format("events.out.tfevents.{:010d}.{}.{}.{}", seconds, host_name(), getpid(),
                     counter++);
}

TensorBoardTracker::TensorBoardTracker(TensorBoardOptions options) : options_(std::move(options)) {}

TensorBoardTracker::~TensorBoardTracker() = default;

std::string TensorBoardTracker::path() const { return writer_ ? writer_->path() : ""; }

void TensorBoardTracker::start(const RunInfo& run) {
  run_ = run;
  writer_.reset();  // a rollback starts a new segment: a new file from its first event
  finished_ = false;
  if (run.dir.empty() || run.config_yaml.empty()) return;
  hparams_ =
      config_hparams(run.config_yaml, options_.hparams, "log.tracker_args.tensorboard.hparams");
}

void TensorBoardTracker::open() {
  const std::string dir = run_.dir + "/tensorboard";
  std::error_code ec;
  fs::create_directories(dir, ec);
  UT_CHECK_TRAIN(!ec, "cannot create ", dir, ": ", ec.message());
  writer_ = std::make_unique<TfRecordWriter>(dir + "/" + new_event_file_name(dir));
  const double now = event_wall_time();
  writer_->write(tensorboard::file_version_event(now));
  const int64_t base = run_.first_step > 0 ? run_.first_step - 1 : 0;  // the checkpoint's step
  last_step_ = base;
  if (run_.resuming() && run_.first_step > 0) {
    writer_->write(tensorboard::session_start_event(now, run_.first_step));
  }
  if (run_.config_yaml.empty()) return;
  writer_->write(tensorboard::text_event(now, base, "config", config_markdown(run_.config_yaml)));
  if (!hparams_.empty()) {
    writer_->write(tensorboard::hparams_session_start_event(now, base, hparams_));
  }
}

void TensorBoardTracker::log(const LogEvent& event) {
  if (run_.dir.empty() || event.metrics.empty()) return;
  if (!writer_) open();
  writer_->write(tensorboard::scalars_event(event_wall_time(), event.step, event.metrics));
  last_step_ = event.step;
}

void TensorBoardTracker::finish(const RunEnd& end) {
  if (!writer_ || finished_) return;
  finished_ = true;
  if (hparams_.empty()) return;
  const double now = event_wall_time();
  std::vector<std::string> metrics;
  for (const auto& kv : end.final_metrics) metrics.push_back(kv.first);
  writer_->write(tensorboard::hparams_experiment_event(now, last_step_, hparams_, metrics));
  if (end.completed) writer_->write(tensorboard::hparams_session_end_event(now, last_step_, true));
}

void register_tensorboard_tracker() {
  tracker_registry().add<TensorBoardOptions>(
      "tensorboard",
      "TensorBoard event files in run_dir/tensorboard/: every metric as a scalar, "
      "the config as text, hyperparameters and final metrics for the hparams dashboard",
      [](const TensorBoardOptions& o, const LogOptions&) -> TrackerPtr {
        return std::make_unique<TensorBoardTracker>(o);
      });
}

}  // namespace unitrain
