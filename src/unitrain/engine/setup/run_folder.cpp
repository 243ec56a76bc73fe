#include "unitrain/engine/setup/run_folder.h"

#include <fcntl.h>
#include <torch/torch.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "unitrain/core/atomic_file.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace fs = std::filesystem;

void prepare_writable_dir(const std::string& run_dir) {
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  UT_CHECK(!ec && fs::is_directory(run_dir), "cannot create run_dir '", run_dir,
           "': ", ec ? ec.message() : "not a directory", "; set run_dir to a writable folder");
  std::string probe = (fs::path(run_dir) / ".write-test").string();
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  bool ok = fd >= 0 && ::write(fd, "ok", 2) == 2;
  if (fd >= 0) ::close(fd);
  ::unlink(probe.c_str());
  UT_CHECK(ok, "run_dir '", run_dir, "' is not writable (", std::strerror(errno),
           "); set run_dir to a writable folder");
}

std::string archive_previous_run(const std::string& run_dir) {
  static const char* kFiles[] = {"config.yaml",  "metrics.jsonl", "metrics.csv", "train.log",
                                 "classes.json", "tensorboard",   "checkpoints", "results"};
  // logs/ itself stays (the launcher is writing this run's logs/rank-N.log there); the other
  // ranks' tracker folders in it (log.all_ranks: logs/rank-N/) belong to the earlier run.
  std::vector<fs::path> moved;
  for (const char* f : kFiles) moved.push_back(f);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(run_dir) / "logs", ec)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("rank-", 0) == 0) {
      moved.push_back(fs::path("logs") / entry.path().filename());
    }
  }
  bool any = false;
  for (const auto& f : moved) any |= fs::exists(fs::path(run_dir) / f);
  if (!any) return "";
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
  fs::path dest = fs::path(run_dir) / "history" / stamp;
  for (int i = 1; fs::exists(dest); ++i)
    dest = fs::path(run_dir) / "history" / (std::string(stamp) + "-" + std::to_string(i));
  fs::create_directories(dest);
  for (const auto& f : moved) {
    fs::path from = fs::path(run_dir) / f;
    if (!fs::exists(from)) continue;
    fs::create_directories((dest / f).parent_path());
    fs::rename(from, dest / f);
  }
  return dest.string();
}

std::string class_names_json(const std::vector<std::string>& classes) {
  if (classes.empty()) return "";
  nlohmann::json out;
  out["classes"] = classes;
  // Names that are not UTF-8 (a folder's bytes) are kept as the replacement character.
  return out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::vector<std::string> parse_class_names(const std::string& text, const std::string& what) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  UT_CHECK_TRAIN(j.is_object() && j.contains("classes") && j["classes"].is_array(), what,
                 " is not a classes.json ({\"classes\": [names]})");
  std::vector<std::string> names;
  for (const auto& n : j["classes"]) {
    UT_CHECK_TRAIN(n.is_string(), what, ": a class name is not a string");
    names.push_back(n.get<std::string>());
  }
  return names;
}

void write_class_names(const std::string& run_dir, const std::vector<std::string>& classes) {
  if (classes.empty()) return;
  write_file_atomic(run_dir + "/classes.json", class_names_json(classes));
}

}  // namespace unitrain
