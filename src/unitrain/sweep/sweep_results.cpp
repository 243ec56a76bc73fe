#include "unitrain/sweep/sweep_results.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "unitrain/core/atomic_file.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string metric_text(const TrialRecord& t) {
  return t.metric() ? fmt::format("{}", *t.metric()) : std::string();
}

/// The rung a trial finished last; none (a trial paused or failed before its first) is "".
std::string rung_text(const TrialRecord& t) {
  return t.rung() >= 0 ? std::to_string(t.rung()) : std::string();
}

/// A parameter's value as JSON: numbers and booleans as such, lists and maps as arrays and
/// objects, null as null, any other text (a categorical choice, a quoted scalar) as a string.
nlohmann::json json_of(const YAML::Node& node) {
  if (node.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& v : node) a.push_back(json_of(v));
    return a;
  }
  if (node.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& kv : node) o[kv.first.Scalar()] = json_of(kv.second);
    return o;
  }
  if (!node.IsScalar()) return nullptr;
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted: a string, whatever it looks like
  if (text == "true" || text == "false") return text == "true";
  if (!text.empty() && text.find_first_not_of("+-0123456789") == std::string::npos) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (errno == 0 && *end == '\0') return static_cast<int64_t>(v);
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (!text.empty() && *end == '\0' && std::isfinite(v)) return v;
  return text;
}

nlohmann::json parameter_json(const std::string& yaml_text) {
  try {
    return json_of(YAML::Load(yaml_text));
  } catch (const YAML::Exception&) {
    return yaml_text;
  }
}

}  // namespace

std::vector<const TrialRecord*> rank_trials(const std::vector<TrialRecord>& trials,
                                            bool higher_is_better) {
  std::vector<const TrialRecord*> out;
  for (const TrialRecord& t : trials) out.push_back(&t);
  std::stable_sort(out.begin(), out.end(), [&](const TrialRecord* a, const TrialRecord* b) {
    if (a->rung() != b->rung()) return a->rung() > b->rung();
    if (!a->metric() || !b->metric()) return a->metric().has_value() && !b->metric();
    return higher_is_better ? *a->metric() > *b->metric() : *a->metric() < *b->metric();
  });
  return out;
}

void write_sweep_results(const std::string& folder, const std::vector<TrialRecord>& trials,
                         const std::string& metric, bool higher_is_better,
                         const std::map<std::string, std::string>& scales) {
  std::vector<std::string> keys;
  if (!trials.empty()) {
    for (const auto& [k, v] : trials.front().parameters) keys.push_back(k);
  }
  std::ostringstream csv;
  csv << "trial";
  for (const auto& k : keys) csv << "," << csv_field(k);
  csv << ",rung," << csv_field(metric) << ",steps,status\n";
  nlohmann::json rows = nlohmann::json::array();
  for (const TrialRecord& t : trials) {
    csv << t.index;
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [k, v] : t.parameters) {
      csv << "," << csv_field(v);
      params[k] = parameter_json(v);
    }
    csv << "," << rung_text(t) << "," << metric_text(t) << "," << t.steps << ","
        << status_name(t.status) << "\n";
    rows.push_back({{"trial", t.index},
                    {"parameters", params},
                    {"rung", t.rung() >= 0 ? nlohmann::json(t.rung()) : nlohmann::json()},
                    {"metric", t.metric() ? nlohmann::json(*t.metric()) : nlohmann::json()},
                    {"rung_metrics", t.rung_metrics},
                    {"steps", t.steps},
                    {"epochs", t.epochs},
                    {"status", status_name(t.status)}});
  }
  write_file_atomic(folder + "/results.csv", csv.str());
  const auto ranked = rank_trials(trials, higher_is_better);
  const nlohmann::json best = !ranked.empty() && ranked.front()->metric()
                                  ? nlohmann::json(ranked.front()->index)
                                  : nlohmann::json();
  write_file_atomic(folder + "/results.json",
                    nlohmann::json{{"metric", metric},
                                   {"mode", higher_is_better ? "max" : "min"},
                                   {"best", best},
                                   {"scales", scales},
                                   {"trials", rows}}
                            .dump(1) +
                        "\n");
}

std::vector<std::string> results_table(const std::vector<TrialRecord>& trials,
                                       const std::string& metric, bool higher_is_better) {
  std::vector<std::vector<std::string>> rows = {{"trial"}};
  if (!trials.empty()) {
    for (const auto& [k, v] : trials.front().parameters) rows[0].push_back(k);
  }
  for (const char* h : {"rung", metric.c_str(), "steps", "status"}) rows[0].push_back(h);
  for (const TrialRecord* t : rank_trials(trials, higher_is_better)) {
    std::vector<std::string> row = {std::to_string(t->index)};
    for (const auto& [k, v] : t->parameters) row.push_back(v);
    row.push_back(t->rung() >= 0 ? std::to_string(t->rung()) : std::string("-"));
    row.push_back(t->metric() ? fmt::format("{:.4f}", *t->metric()) : std::string("-"));
    row.push_back(std::to_string(t->steps));
    row.push_back(status_name(t->status));
    rows.push_back(std::move(row));
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::vector<std::string> lines;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += fmt::format("{}{:<{}}", c ? "  " : "", row[c], c + 1 < row.size() ? widths[c] : 0);
    }
    lines.push_back(line);
  }
  return lines;
}

}  // namespace unitrain
