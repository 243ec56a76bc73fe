#include "unitrain/sweep/sweep_results.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "unitrain/core/error.h"
#include "unitrain/engine/setup/run_folder.h"

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
      params[k] = v;
    }
    csv << "," << t.rung() << "," << metric_text(t) << "," << t.steps << ","
        << status_name(t.status) << "\n";
    rows.push_back({{"trial", t.index},
                    {"parameters", params},
                    {"rung", t.rung()},
                    {"metric", t.metric() ? nlohmann::json(*t.metric()) : nlohmann::json()},
                    {"rung_metrics", t.rung_metrics},
                    {"steps", t.steps},
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
    row.push_back(std::to_string(t->rung()));
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
