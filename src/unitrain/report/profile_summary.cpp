#include "unitrain/report/profile_summary.h"

#include "unitrain/core/error.h"
#include "unitrain/report/json_read.h"

namespace unitrain::report {

ProfileSummary parse_profile_summary(const std::string& text, const std::string& source) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  UT_CHECK(j.is_object(), source, " is not a JSON object");
  ProfileSummary p;
  if (j.contains("steps")) {
    UT_CHECK(j["steps"].is_number_integer() && j["steps"].get<int64_t>() >= 0, source,
             ": \"steps\" must be a count >= 0, got ", j["steps"].dump());
    p.steps = j["steps"].get<int64_t>();
  }
  UT_CHECK(j.contains("phases") && j["phases"].is_array(), source,
           ": \"phases\" must be a list of {\"name\", \"total_seconds\", \"mean_ms\", \"share\"}");
  double total = 0;
  for (const auto& ph : j["phases"]) {
    UT_CHECK(ph.is_object() && ph.contains("name") && ph["name"].is_string(), source,
             ": each phase needs a \"name\" string, got ", ph.dump());
    PhaseTiming t;
    t.name = ph["name"].get<std::string>();
    const auto seconds = json_double(ph.value("total_seconds", nlohmann::json()));
    UT_CHECK(seconds.has_value(), source, ": phase '", t.name,
             "' needs \"total_seconds\" as a number, got ",
             ph.value("total_seconds", nlohmann::json()).dump());
    t.total_seconds = *seconds;
    total += t.total_seconds;
    // mean_ms and share are optional: derived from total_seconds when absent.
    for (const auto& [key, field] :
         {std::pair{"mean_ms", &t.mean_ms}, std::pair{"share", &t.share}}) {
      if (!ph.contains(key)) {
        *field = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      const auto v = json_double(ph[key]);
      UT_CHECK(v.has_value(), source, ": phase '", t.name, "': \"", key,
               "\" must be a number, got ", ph[key].dump());
      *field = *v;
    }
    p.phases.push_back(t);
  }
  for (auto& t : p.phases) {
    if (std::isnan(t.mean_ms) && p.steps > 0) t.mean_ms = t.total_seconds * 1000.0 / p.steps;
    if (std::isnan(t.share) && total > 0) t.share = t.total_seconds / total;
  }
  return p;
}

}  // namespace unitrain::report
