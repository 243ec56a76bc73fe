#include "unitrain/data/csv_dataset.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/file_bytes.h"
#include "unitrain/data/class_names.h"
#include "unitrain/data/tensor_dataset.h"

namespace unitrain {
namespace {

std::string_view trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// Splits one line at `delim`, honouring double quotes; cells are trimmed and unquoted.
std::vector<std::string_view> split_cells(std::string_view line, char delim) {
  std::vector<std::string_view> cells;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i <= line.size(); ++i) {
    if (i < line.size() && line[i] == '"') quoted = !quoted;
    if (i == line.size() || (line[i] == delim && !quoted)) {
      std::string_view cell = trim(line.substr(start, i - start));
      if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') {
        cell = cell.substr(1, cell.size() - 2);
      }
      cells.push_back(cell);
      start = i + 1;
    }
  }
  return cells;
}

bool parse_number(std::string_view cell, double* out) {
  if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);
  if (cell.empty()) return false;
  auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), *out);
  return ec == std::errc() && end == cell.data() + cell.size() && std::isfinite(*out);
}

std::string join_columns(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

// The index of column `spec` (a name, else an integer index, negative from the end). Without a
// header the names are the indexes themselves, so a miss says how many columns there are instead
// of suggesting a near-looking index ('1' for '31') that is a different column.
size_t find_column(const std::string& spec, const std::vector<std::string>& names, bool header,
                   const std::string& what, const std::string& path) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == spec) return i;
  }
  int64_t index = 0;
  auto [end, ec] = std::from_chars(spec.data(), spec.data() + spec.size(), index);
  const auto n = static_cast<int64_t>(names.size());
  if (ec == std::errc() && end == spec.data() + spec.size() && index >= -n && index < n) {
    return static_cast<size_t>(index < 0 ? index + n : index);
  }
  const std::string range = detail::concat(n, " columns: 0..", n - 1, ", or -1 for the last");
  if (!header) {
    throw ConfigError(detail::concat("csv: ", what, " column '", spec, "' is not in '", path,
                                     "'; it has no header (header: false), so columns are named "
                                     "by index and it has ",
                                     range));
  }
  std::string hint = closest_match(spec, names);
  throw ConfigError(detail::concat("csv: ", what, " column '", spec, "' is not in '", path, "'",
                                   hint.empty() ? "" : " (did you mean '" + hint + "'?)",
                                   "; its columns are: ", join_columns(names),
                                   " (or use an index; it has ", range, ")"));
}

struct Line {
  std::string_view text;
  int64_t number;  // 1-based line number in the file
};

// The non-blank lines of `text` after the first `skip` lines.
std::vector<Line> split_lines(const std::string& text, int64_t skip) {
  std::vector<Line> lines;
  int64_t number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    ++number;
    std::string_view line(text.data() + pos, end - pos);
    if (number > skip && !trim(line).empty()) lines.push_back({line, number});
    pos = end + 1;
  }
  return lines;
}

// The columns of a CSV file: their names (the header's, or their indexes without one), where the
// data rows start, and the target and feature columns the options pick.
struct CsvColumns {
  std::vector<std::string> names;
  size_t first_row = 0;  // the index in `lines` of the first data row
  size_t target = 0;
  std::vector<size_t> features;
};

CsvColumns csv_columns(const CsvOptions& o, const std::vector<Line>& lines, char delim) {
  CsvColumns columns;
  std::vector<std::string>& names = columns.names;
  if (o.header) {
    for (auto cell : split_cells(lines[0].text, delim)) names.emplace_back(cell);
    columns.first_row = 1;
  } else {
    size_t n = split_cells(lines[0].text, delim).size();
    for (size_t i = 0; i < n; ++i) names.push_back(std::to_string(i));
  }
  UT_CHECK(lines.size() > columns.first_row, "csv: '", o.path, "' has a header but no data rows");

  const size_t target = find_column(o.target, names, o.header, "target", o.path);
  columns.target = target;
  std::vector<size_t>& features = columns.features;
  for (const auto& f : o.features) {
    size_t c = find_column(f, names, o.header, "feature", o.path);
    UT_CHECK(c != target, "csv: feature column '", f, "' is the target column '", names[c],
             "' of '", o.path, "'");
    features.push_back(c);
  }
  if (o.features.empty()) {
    for (size_t c = 0; c < names.size(); ++c) {
      if (c != target) features.push_back(c);
    }
  }
  UT_CHECK(!features.empty(), "csv: '", o.path, "' has no feature columns besides the target");
  return columns;
}

// The numbers of a CSV file's data rows: the features row after row, the targets as class
// indexes (target_type class) or floats.
struct CsvValues {
  std::vector<float> x;
  std::vector<int64_t> y_class;
  std::vector<float> y_float;
  int64_t max_class = -1;
  std::vector<std::string> class_cells;  ///< class targets: each row's cell, as written
  std::vector<size_t> class_lines;       ///< and its line number
  std::vector<std::string> class_names;  ///< a target of names: index -> name
};

bool parses_as_number(const std::string& cell) {
  double v = 0;
  return parse_number(cell, &v);
}

// A class target: indices as written when every cell is a number (and no `classes` are given),
// else the cells are names, numbered in `classes` order or sorted.
void class_targets(const CsvOptions& o, const CsvColumns& columns, CsvValues& values) {
  const std::vector<std::string>& cells = values.class_cells;
  const std::string& column = columns.names[columns.target];
  const bool names =
      !o.classes.empty() || !std::all_of(cells.begin(), cells.end(), parses_as_number);
  values.y_class.reserve(cells.size());
  if (!names) {
    for (size_t r = 0; r < cells.size(); ++r) {
      double t = 0;
      parse_number(cells[r], &t);
      UT_CHECK(t >= 0 && t == std::floor(t), "csv: '", o.path, "' line ", values.class_lines[r],
               ", column ", columns.target + 1, " ('", column, "'): '", cells[r],
               "' is not a class index (a whole number >= 0); use target_type: float for "
               "regression");
      values.y_class.push_back(static_cast<int64_t>(t));
      values.max_class = std::max(values.max_class, values.y_class.back());
    }
    return;
  }
  IndexedClasses named = index_class_names(cells, o.classes, [&](size_t r) {
    return detail::concat("csv: '", o.path, "' line ", values.class_lines[r], ", column ",
                          columns.target + 1, " ('", column, "')");
  });
  values.y_class = std::move(named.indices);
  values.max_class = static_cast<int64_t>(named.classes.size()) - 1;
  values.class_names = std::move(named.classes);
}

CsvValues csv_values(const CsvOptions& o, const std::vector<Line>& lines, char delim,
                     const CsvColumns& columns) {
  const std::vector<std::string>& names = columns.names;
  const size_t first_row = columns.first_row;
  const size_t target = columns.target;
  const bool is_class = o.target_type == "class";
  CsvValues values;
  values.x.reserve((lines.size() - first_row) * columns.features.size());
  for (size_t r = first_row; r < lines.size(); ++r) {
    const Line& line = lines[r];
    auto cells = split_cells(line.text, delim);
    UT_CHECK(cells.size() == names.size(), "csv: '", o.path, "' line ", line.number, " has ",
             cells.size(), " cells, expected ", names.size(),
             o.header ? " (as in the header)" : " (as in the first row)");
    auto number = [&](size_t c) {
      double v = 0;
      UT_CHECK(parse_number(cells[c], &v), "csv: '", o.path, "' line ", line.number, ", column ",
               c + 1, " ('", names[c], "'): '", std::string(cells[c]),
               "' is not a number (only numeric columns can be features or targets)",
               !o.header && r == first_row
                   ? "; if this line names the columns or is a preamble, set "
                     "header: true or skip_rows"
                   : "");
      // Stored as float32: a larger magnitude would become inf, which is refused as nan is.
      UT_CHECK(std::abs(v) <= std::numeric_limits<float>::max(), "csv: '", o.path, "' line ",
               line.number, ", column ", c + 1, " ('", names[c], "'): ", std::string(cells[c]),
               " is outside float32's range (magnitude up to 3.4e38), the precision the "
               "columns are read in");
      return v;
    };
    for (size_t c : columns.features) values.x.push_back(static_cast<float>(number(c)));
    if (is_class) {  // an index or a name: known once every row is read
      values.class_cells.emplace_back(cells[target]);
      values.class_lines.push_back(line.number);
    } else {
      values.y_float.push_back(static_cast<float>(number(target)));
    }
  }
  if (is_class) class_targets(o, columns, values);
  return values;
}

}  // namespace

void CsvOptions::declare(Options<CsvOptions>& o) {
  using T = CsvOptions;
  o.field("path", &T::path)
      .required()
      .help(
          "CSV file; .gz files are decompressed; a relative path is read from the current "
          "directory");
  o.field("target", &T::target)
      .required()
      .help("target column: a name, or an index (\"-1\" = last) when header is false");
  o.field("features", &T::features).help("feature columns (names or indices); [] = all others");
  o.field("target_type", &T::target_type)
      .choices({"class", "float"})
      .help("class: int64 class index; float: float32 regression target of shape [1]");
  o.field("delimiter", &T::delimiter).help("the one-character cell separator");
  o.field("header", &T::header).help("the first row names the columns; false: named 0, 1, ...");
  o.field("skip_rows", &T::skip_rows).min(0).help("lines to skip before the header or first row");
  o.field("classes", &T::classes)
      .help(
          "a class target of names (cat, dog, ...): the names in index order; [] = the sorted "
          "names of this file (data.val and data.test take data.train's); written to "
          "run_dir/classes.json");
  o.check([](T& t, const Config& c) {
    UT_CHECK(t.delimiter.size() == 1, c.key_path("delimiter"), " must be one character, got '",
             t.delimiter, "'");
  });
}

DatasetPtr load_csv(const CsvOptions& o) {
  UT_CHECK(o.delimiter.size() == 1, "csv: delimiter must be one character, got '", o.delimiter,
           "'");
  UT_CHECK(o.target_type == "class" || o.target_type == "float",
           "csv: target_type must be class or float, got '", o.target_type, "'");
  const std::string text = read_file_bytes(o.path, "csv");
  std::vector<Line> lines = split_lines(text, o.skip_rows);
  UT_CHECK(!lines.empty(), "csv: '", o.path, "' is empty",
           o.skip_rows > 0 ? " after skipping " + std::to_string(o.skip_rows) + " rows" : "");
  const char delim = o.delimiter[0];
  const CsvColumns columns = csv_columns(o, lines, delim);
  CsvValues values = csv_values(o, lines, delim, columns);

  const bool is_class = o.target_type == "class";
  const auto rows = static_cast<int64_t>(lines.size() - columns.first_row);
  const auto num_features = static_cast<int64_t>(columns.features.size());
  torch::Tensor x_tensor =
      torch::from_blob(values.x.data(), {rows, num_features}, torch::kFloat32).clone();
  torch::Tensor y_tensor =
      is_class ? torch::from_blob(values.y_class.data(), {rows}, torch::kInt64).clone()
               : torch::from_blob(values.y_float.data(), {rows, 1}, torch::kFloat32).clone();
  std::map<std::string, int64_t> info{{"num_features", num_features}};
  if (is_class) info["num_classes"] = values.max_class + 1;
  auto dataset = std::make_shared<TensorDataset>(Batch{{"x", x_tensor}, {"y", y_tensor}}, info,
                                                 "csv '" + o.path + "'");
  if (!values.class_names.empty()) {
    spdlog::info("csv '{}': column '{}' holds class names: {} classes ({})", o.path,
                 columns.names[columns.target], values.class_names.size(),
                 some_names(values.class_names));
    dataset->set_class_names(std::move(values.class_names));
  }
  return dataset;
}

void register_csv_dataset() {
  dataset_registry().add<CsvOptions>(
      "csv",
      "a CSV file (.gz too) of numeric feature columns and a target: x float32 [F], y a class (an "
      "index or a name) or float",
      load_csv);
}

}  // namespace unitrain
