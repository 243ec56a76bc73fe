#pragma once
// Guessing a CSV file's layout from its first lines, for `unitrain init`.
#include <cstdint>
#include <string>
#include <vector>

namespace unitrain {

/// A CSV file's layout as the `csv` dataset's args spell it.
struct CsvLayout {
  char delimiter = ',';
  bool header = true;                ///< a line of column names precedes the rows
  int64_t skip_rows = 0;             ///< lines before the header (or the first row)
  std::vector<std::string> columns;  ///< the header's names, or "0", "1", ... without one
};

/// Reads the first lines of `path` (plain or .gz; like Python's csv.Sniffer): the delimiter is
/// the first of `,` `;` tab found, else a space; the first row is the first line of two or more
/// cells, all numbers but at most one (a class name); the line before it is the header when it has
/// as many cells and none is a number; lines before the header, or before the first row without
/// one, are skipped (scikit-learn's CSVs start with a line of counts). ConfigError naming the file
/// when it is missing or has no row of numbers in its first 50 lines.
CsvLayout sniff_csv(const std::string& path);

}  // namespace unitrain
