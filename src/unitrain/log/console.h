#pragma once
// Console and train.log messages (spdlog), shared by every part of unitrain.
#include <fmt/format.h>

#include <string>

namespace unitrain::log {

/// Also writes every message to `path` (the run's train.log) from now on.
void add_file(const std::string& path);
/// Prefix for every message, e.g. "[rank 1] " (empty for a single process).
void set_prefix(const std::string& prefix);
void info(const std::string& message);
void warn(const std::string& message);
void error(const std::string& message);
/// From now on only warnings and errors reach the console (the other ranks of a
/// data-parallel run); the file still gets everything.
void console_warnings_only();
/// Writes a message to train.log only (not the console).
void file_only(const std::string& message);
/// Writes an error to train.log only: the failure a library call throws, which its caller says
/// (a program of its own prints it; the command's error() then reaches the console alone).
void error_in_file(const std::string& message);
/// Called before a console line is printed, to clear a progress bar (set by the progress bar).
void set_before_print(void (*hook)());
/// Flushes every sink.
void flush();

}  // namespace unitrain::log
