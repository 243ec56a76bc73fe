#include "unitrain/engine/setup/run_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "unitrain/core/error.h"
#include "unitrain/core/host_name.h"

namespace unitrain {
namespace {

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return stamp;
}

/// What the lock file says of its holder; nothing when it is empty or unreadable (a holder
/// that has the lock but has not written it yet).
std::optional<RunDirHolder> read_holder(int fd) {
  std::string text;
  char buf[1024];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    at += n;
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  RunDirHolder h;
  h.pid = j.value("pid", 0L);
  h.host = j.value("host", std::string());
  h.since = j.value("since", std::string());
  return h;
}

void write_holder(int fd) {
  nlohmann::json j;
  j["pid"] = static_cast<long>(::getpid());
  j["host"] = host_name();
  j["since"] = utc_now();
  const std::string text = j.dump() + "\n";
  if (::ftruncate(fd, 0) != 0) return;  // the lock holds without it; only the message suffers
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::pwrite(fd, text.data() + done, text.size() - done, off_t(done));
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

/// `run_dir` absolute, normalised, without a trailing '/'.
std::filesystem::path absolute_folder(const std::string& run_dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(run_dir, ec).lexically_normal();
  return p.has_filename() ? p : p.parent_path();
}

}  // namespace

std::string RunDirHolder::describe() const {
  std::string out = "pid " + std::to_string(pid);
  if (!host.empty()) out += " on host " + host;
  if (!since.empty()) out += " since " + since;
  if (pid == ::getpid() && host == host_name()) out += " (this process)";
  return out;
}

std::string RunDirLock::path_of(const std::string& run_dir) {
  return (std::filesystem::path(run_dir) / ".lock").string();
}

std::unique_ptr<RunDirLock> RunDirLock::acquire(const std::string& run_dir,
                                                const std::string& new_run) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string created;  // the outermost folder that is not there yet
  for (fs::path p = absolute_folder(run_dir); !p.empty() && !fs::exists(p, ec);
       p = p.parent_path()) {
    created = p.string();
    if (p == p.parent_path()) break;
  }
  fs::create_directories(run_dir, ec);
  UT_CHECK(!ec && std::filesystem::is_directory(run_dir), "cannot create run_dir '", run_dir,
           "': ", ec ? ec.message() : "not a directory", "; set run_dir to a writable folder");
  const std::string path = path_of(run_dir);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  UT_CHECK(fd >= 0, "cannot open the lock file ", path, " of run_dir '", run_dir,
           "': ", std::strerror(errno), "; set run_dir to a writable folder");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::optional<RunDirHolder> h = err == EWOULDBLOCK ? read_holder(fd) : std::nullopt;
    ::close(fd);
    UT_CHECK(err != EWOULDBLOCK, "run folder ", run_dir, " is in use by ",
             h ? h->describe() : std::string("another process (starting up)"),
             "; start another run with ", new_run, ", or stop that run");
    throw ConfigError(detail::concat("cannot lock run_dir '", run_dir, "' (", path,
                                     "): ", std::strerror(err),
                                     "; the file system must support flock, or set run_dir to "
                                     "a local folder"));
  }
  write_holder(fd);
  return std::unique_ptr<RunDirLock>(new RunDirLock(run_dir, fd, created));
}

bool RunDirLock::undo_creation() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (created_.empty()) return false;
  for (const auto& entry : fs::directory_iterator(run_dir_, ec)) {
    if (entry.path().filename() != ".lock") return false;
  }
  if (ec || !fs::remove(path_of(run_dir_), ec)) return false;
  // Innermost first; a folder something else wrote to meanwhile is not empty and stays.
  for (fs::path p = absolute_folder(run_dir_); fs::remove(p, ec); p = p.parent_path()) {
    if (p.string() == created_) break;
  }
  created_.clear();
  return true;
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the lock
}

}  // namespace unitrain
