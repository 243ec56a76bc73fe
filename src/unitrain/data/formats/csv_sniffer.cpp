#include "unitrain/data/formats/csv_sniffer.h"

#include <algorithm>
#include <charconv>

#include "unitrain/core/error.h"
#include "unitrain/core/file_bytes.h"

namespace unitrain {
namespace {

constexpr size_t kLinesRead = 50;

std::vector<std::string> split(const std::string& line, char delim) {
  std::vector<std::string> cells;
  size_t start = 0;
  for (size_t i = 0; i <= line.size(); ++i) {
    if (i == line.size() || line[i] == delim) {
      const std::string cell = line.substr(start, i - start);
      const size_t b = cell.find_first_not_of(" \t\r\"");
      const size_t e = cell.find_last_not_of(" \t\r\"");
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
      start = i + 1;
    }
  }
  return cells;
}

bool is_number(const std::string& cell) {
  const char* begin = cell.data() + (!cell.empty() && cell[0] == '+' ? 1 : 0);
  double v = 0;
  auto [end, ec] = std::from_chars(begin, cell.data() + cell.size(), v);
  return !cell.empty() && ec == std::errc() && end == cell.data() + cell.size();
}

}  // namespace

CsvLayout sniff_csv(const std::string& path) {
  const std::string text = read_file_bytes(path, "csv");
  std::vector<std::string> lines;  // raw lines, blank ones kept: skip_rows counts them
  for (size_t pos = 0; pos < text.size() && lines.size() < kLinesRead;) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    lines.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  CsvLayout layout;
  layout.delimiter = ' ';
  for (char d : {',', ';', '\t'}) {
    if (std::any_of(lines.begin(), lines.end(),
                    [d](const std::string& l) { return l.find(d) != std::string::npos; })) {
      layout.delimiter = d;
      break;
    }
  }
  // A row: two or more cells, every one a number but at most one (a target of class names,
  // which training takes too: "cat", "dog").
  const auto is_row = [](const std::vector<std::string>& cells) {
    return cells.size() > 1 &&
           std::count_if(cells.begin(), cells.end(), is_number) + 1 >=
               std::ptrdiff_t(cells.size()) &&
           std::any_of(cells.begin(), cells.end(), is_number);
  };
  size_t first_row = 0;
  std::vector<std::string> row;
  for (; first_row < lines.size(); ++first_row) {
    row = split(lines[first_row], layout.delimiter);
    // ... with as many cells as the next line (a count line, "178,13,class_0", has fewer).
    if (is_row(row) && (first_row + 1 >= lines.size() || lines[first_row + 1].empty() ||
                        split(lines[first_row + 1], layout.delimiter).size() == row.size())) {
      break;
    }
  }
  UT_CHECK(first_row < lines.size(), "csv: '", path, "' has no row of numbers separated by '",
           layout.delimiter == '\t' ? std::string("\\t") : std::string(1, layout.delimiter),
           "' in its first ", lines.size(),
           " lines (one cell a row may be a class name); is it "
           "a CSV of numbers?");
  if (first_row > 0) {
    layout.columns = split(lines[first_row - 1], layout.delimiter);
    if (layout.columns.size() != row.size() ||
        std::any_of(layout.columns.begin(), layout.columns.end(), is_number)) {
      layout.columns.clear();
    }
  }
  layout.header = !layout.columns.empty();
  layout.skip_rows = static_cast<int64_t>(layout.header ? first_row - 1 : first_row);
  if (!layout.header) {
    for (size_t i = 0; i < row.size(); ++i) layout.columns.push_back(std::to_string(i));
  }
  return layout;
}

}  // namespace unitrain
