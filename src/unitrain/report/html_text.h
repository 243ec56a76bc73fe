#pragma once
// Text that goes into the HTML report: escaping and the way numbers and durations read.
#include <string>

namespace unitrain::report {

/// `text` safe inside HTML text and inside a quoted attribute value: & < > " ' become entities.
/// Every string the report takes from a run folder (names, paths, config values, metric names)
/// goes through this.
std::string html_escape(const std::string& text);

/// A metric value as a person reads it: 4 significant digits ("0.9053", "1.996", "1234",
/// "1.235e+05"), "NaN", "inf" or "-inf".
std::string format_value(double v);

/// Seconds as "0.28 s", "42.1 s", "3 min 05 s", "2 h 03 min".
std::string format_duration(double seconds);

}  // namespace unitrain::report
