// metrics.jsonl and metrics.csv.
#include <cmath>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "unitrain/core/error.h"
#include "unitrain/log/tracker.h"

namespace unitrain {
namespace {

nlohmann::json number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity");
}

class JsonlTracker : public Tracker {
 public:
  explicit JsonlTracker(const std::string& path) : path_(path), out_(path, std::ios::app) {
    UT_CHECK_TRAIN(out_.good(), "cannot write ", path);
  }
  void log(const LogEvent& e) override {
    nlohmann::ordered_json j;
    j["step"] = e.step;
    j["epoch"] = e.epoch;
    j["samples"] = e.samples;
    j["time"] = std::round(e.time * 1000.0) / 1000.0;
    for (const auto& [k, v] : e.metrics) j[k] = number(v);
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
  explicit CsvTracker(const std::string& path) : path_(path) {
    std::ofstream probe(path, std::ios::trunc);
    UT_CHECK_TRAIN(probe.good(), "cannot write ", path);
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
  std::string path_;
  std::set<std::string> columns_;
  std::vector<LogEvent> rows_;
};

}  // namespace

std::unique_ptr<Tracker> make_jsonl_tracker(const std::string& path) {
  return std::make_unique<JsonlTracker>(path);
}

std::unique_ptr<Tracker> make_csv_tracker(const std::string& path) {
  return std::make_unique<CsvTracker>(path);
}

std::shared_ptr<const Schema> LogOptions::schema() {
  static auto s = [] {
    auto s = std::make_shared<Schema>();
    s->add("trackers", Type::StringList).def("[console, jsonl, csv]")
        .choices({"console", "jsonl", "csv"})
        .help("where log events go: console lines, run_dir/metrics.jsonl, run_dir/metrics.csv");
    s->add("progress_bar", Type::String).def("auto").choices({"auto", "true", "false"})
        .help("a progress bar with rate, ETA and running loss; auto = when stdout is a terminal");
    return s;
  }();
  return s;
}

LogOptions LogOptions::from_config(const Config& c) {
  LogOptions o;
  o.trackers = c.get_string_list("trackers");
  o.progress_bar = c.get_string("progress_bar");
  return o;
}

}  // namespace unitrain
