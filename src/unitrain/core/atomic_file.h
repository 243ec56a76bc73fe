#pragma once
// write_file_atomic: a file that readers see whole or not at all. Here, below every room that
// writes a run's files (the engine's run folder, log/'s summary, a sweep's results).
#include <string>

namespace unitrain {

/// Writes `text` to `path` atomically (temporary file, fsync, rename). TrainError naming the
/// file when it cannot.
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace unitrain
