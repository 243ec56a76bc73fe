#pragma once
// `unitrain init`: a commented starter config, filled in from the data.
#include <string>
#include <vector>

namespace unitrain {

/// What `unitrain init` is asked for.
struct StarterOptions {
  std::string task = "classification";  ///< one of starter_tasks()
  std::string data;    ///< a CSV, an IDX images file or a text file; "" = the packaged example
  std::string target;  ///< CSV column to predict (name, or index when the file has no header);
                       ///< "" = the last column
};

/// The tasks `init` writes a config for: classification, regression (CSV + MLP), image (IDX +
/// CNN), language-model (text + char-level transformer).
const std::vector<std::string>& starter_tasks();

/// A commented YAML config that `unitrain train` runs as written and that finishes in well under
/// a minute on a laptop CPU (a few hundred optimizer steps). The data fills it in: a CSV's
/// header, delimiter, target column, number of inputs and (classification) classes; an IDX
/// file's image size and classes (its labels file is found next to it); a text file's
/// vocabulary. Without `data` it points at the packaged example data and says so in a comment.
/// ConfigError for an unknown task or target column, or a missing or unreadable data file.
std::string starter_config(const StarterOptions& options);

/// Writes starter_config(options) to `out`. ConfigError when `out` exists: it never overwrites.
void write_starter_config(const StarterOptions& options, const std::string& out);

}  // namespace unitrain
