#include "unitrain/log/file_trackers.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "unitrain/core/error.h"
#include "unitrain/log/console.h"
#include "unitrain/log/json_number.h"

namespace unitrain {
namespace {

/// The lines of a text file (none when it does not exist).
std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// Keeps the first `keep` lines of `path` (rewritten atomically); warns when it has fewer.
void keep_lines(const std::string& path, size_t keep) {
  std::vector<std::string> lines = read_lines(path);
  if (lines.size() < keep) {
    log::warn(detail::concat(path, " has ", lines.size(), " lines, the checkpoint expected ", keep,
                             "; continuing after what is there"));
  }
  lines.resize(std::min(lines.size(), keep));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& l : lines) out << l << "\n";
    UT_CHECK_TRAIN(out.good(), "writing ", tmp, " failed (disk full?)");
  }
  UT_CHECK_TRAIN(std::rename(tmp.c_str(), path.c_str()) == 0, "cannot rename ", tmp, " to ", path);
}

class JsonlTracker : public Tracker {
 public:
  JsonlTracker(const std::string& path, int64_t keep_events) : path_(path) {
    if (keep_events >= 0) keep_lines(path, size_t(keep_events));
    out_.open(path, keep_events >= 0 ? std::ios::app : std::ios::trunc);
    UT_CHECK_TRAIN(out_.good(), "cannot write ", path);
  }
  void log(const LogEvent& e) override {
    nlohmann::ordered_json j;
    j["step"] = e.step;
    j["epoch"] = e.epoch;
    j["samples"] = e.samples;
    j["time"] = std::round(e.time * 1000.0) / 1000.0;
    for (const auto& [k, v] : e.metrics) j[k] = json_number(v);
    out_ << j.dump() << "\n";
    out_.flush();
    UT_CHECK_TRAIN(out_.good(), "writing ", path_, " failed (disk full?)");
  }

 private:
  std::string path_;
  std::ofstream out_;
};

class CsvTracker : public Tracker {
 public:
  CsvTracker(const std::string& path, int64_t keep_events) : path_(path) {
    if (keep_events >= 0) {
      reload(size_t(keep_events));
    } else {
      std::ofstream probe(path, std::ios::trunc);
      UT_CHECK_TRAIN(probe.good(), "cannot write ", path);
    }
  }
  void log(const LogEvent& e) override {
    bool widened = false;
    for (const auto& kv : e.metrics) widened |= columns_.insert(kv.first).second;
    rows_.push_back(e);
    if (widened) {
      rewrite();
    } else {
      std::ofstream out(path_, std::ios::app);
      write_row(out, e);
    }
  }

 private:
  static void cell(std::ostream& out, double v) {
    if (std::isfinite(v)) {
      out << std::setprecision(10) << v;
    } else {
      out << (std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    }
  }
  void write_row(std::ostream& out, const LogEvent& e) const {
    out << e.step << "," << e.epoch << "," << e.samples << ",";
    cell(out, std::round(e.time * 1000.0) / 1000.0);
    for (const auto& c : columns_) {
      out << ",";
      auto it = e.metrics.find(c);
      if (it != e.metrics.end()) cell(out, it->second);
    }
    out << "\n";
  }
  void rewrite() const {
    std::string tmp = path_ + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << "step,epoch,samples,time";
      for (const auto& c : columns_) out << "," << c;
      out << "\n";
      for (const auto& r : rows_) write_row(out, r);
      UT_CHECK_TRAIN(out.good(), "writing ", tmp, " failed (disk full?)");
    }
    std::rename(tmp.c_str(), path_.c_str());
  }
  /// Reads the first `keep` rows back (resuming a run) and rewrites the file with them.
  void reload(size_t keep) {
    std::vector<std::string> lines = read_lines(path_);
    std::vector<std::string> header = lines.empty() ? std::vector<std::string>{} : split(lines[0]);
    const size_t rows = lines.empty() ? 0 : lines.size() - 1;
    if (rows < keep) {
      log::warn(detail::concat(path_, " has ", rows, " rows, the checkpoint expected ", keep,
                               "; continuing after what is there"));
    }
    for (size_t r = 1; r <= std::min(rows, keep); ++r) {
      std::vector<std::string> cells = split(lines[r]);
      LogEvent e;
      for (size_t c = 0; c < header.size() && c < cells.size(); ++c) {
        if (c < 4) {
          const double v = std::strtod(cells[c].c_str(), nullptr);
          if (c == 0) e.step = int64_t(v);
          if (c == 1) e.epoch = int64_t(v);
          if (c == 2) e.samples = int64_t(v);
          if (c == 3) e.time = v;
        } else if (!cells[c].empty()) {
          e.metrics[header[c]] = std::strtod(cells[c].c_str(), nullptr);  // reads nan/inf too
        }
      }
      rows_.push_back(e);
    }
    for (size_t c = 4; c < header.size(); ++c) columns_.insert(header[c]);
    rewrite();
  }
  static std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> out(1);
    for (char ch : line) {
      if (ch == ',') {
        out.emplace_back();
      } else {
        out.back() += ch;
      }
    }
    return out;
  }
  std::string path_;
  std::set<std::string> columns_;
  std::vector<LogEvent> rows_;
};

}  // namespace

TrackerPtr make_jsonl_tracker(const std::string& path, int64_t keep_events) {
  return std::make_unique<JsonlTracker>(path, keep_events);
}

TrackerPtr make_csv_tracker(const std::string& path, int64_t keep_events) {
  return std::make_unique<CsvTracker>(path, keep_events);
}

namespace {

/// A metrics file in the run's tracker folder (RunInfo::dir), opened when the run starts.
class MetricsFileTracker : public Tracker {
 public:
  using Make = TrackerPtr (*)(const std::string& path, int64_t keep_events);
  MetricsFileTracker(std::string file_name, Make make)
      : file_name_(std::move(file_name)), make_(make) {}
  void start(const RunInfo& run) override {
    if (!run.dir.empty()) file_ = make_(run.dir + "/" + file_name_, run.keep_events);
  }
  void log(const LogEvent& e) override {
    if (file_) file_->log(e);
  }
  void flush() override {
    if (file_) file_->flush();
  }

 private:
  std::string file_name_;
  Make make_;
  TrackerPtr file_;
};

}  // namespace

void register_file_trackers() {
  tracker_registry().add(
      "jsonl",
      "run_dir/metrics.jsonl: one JSON object per log event (step, epoch, samples, time, "
      "metrics)",
      Schema(), [](const Config&, const LogOptions&) -> TrackerPtr {
        return std::make_unique<MetricsFileTracker>("metrics.jsonl", &make_jsonl_tracker);
      });
  tracker_registry().add("csv", "run_dir/metrics.csv: one row per log event, a column per metric",
                         Schema(), [](const Config&, const LogOptions&) -> TrackerPtr {
                           return std::make_unique<MetricsFileTracker>("metrics.csv",
                                                                       &make_csv_tracker);
                         });
}

}  // namespace unitrain
