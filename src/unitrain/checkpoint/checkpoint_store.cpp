#include "unitrain/checkpoint/checkpoint_store.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "unitrain/checkpoint/file_image.h"
#include "unitrain/core/error.h"
#include "unitrain/core/host_name.h"
#include "unitrain/core/mapped_file.h"

namespace unitrain {
namespace fs = std::filesystem;

namespace {

constexpr const char* kManifest = "MANIFEST.json";
constexpr int kFormat = 1;

std::string errno_text() { return std::strerror(errno); }

void fsync_path(const std::string& path, bool directory) {
  int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  UT_CHECK_TRAIN(fd >= 0, "cannot open ", path, " to sync it: ", errno_text());
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  UT_CHECK_TRAIN(rc == 0, "syncing ", path, " failed: ", std::strerror(err));
}

/// The manifest of `dir`, or a null json when it is missing or unreadable.
nlohmann::json manifest_of(const std::string& dir) {
  std::ifstream in(dir + "/" + kManifest);
  if (!in.good()) return nullptr;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("files") || !j["files"].is_object()) {
    return nullptr;
  }
  for (const auto& [name, info] : j["files"].items()) {
    if (!info.is_object() || !info.contains("size") || !info["size"].is_number_unsigned() ||
        !info.contains("crc32") || !info["crc32"].is_number_unsigned() || name.empty() ||
        name.find('/') != std::string::npos) {
      return nullptr;  // not a manifest this store wrote
    }
  }
  return j;
}

/// A pause between files, for fault-injection tests (kill during a save).
void maybe_pause_for_tests() {
  static const long ms = [] {
    const char* v = std::getenv("UNITRAIN_TEST_CHECKPOINT_PAUSE_MS");
    return v ? std::atol(v) : 0L;
  }();
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

/// Writes `files`, then their manifest, into the folder `tmp`, and syncs it.
void write_files(const std::string& tmp, int64_t step, const std::vector<CheckpointFile>& files) {
  nlohmann::ordered_json manifest;
  manifest["format"] = kFormat;
  manifest["step"] = step;
  nlohmann::ordered_json listed = nlohmann::ordered_json::object();
  std::error_code ec;
  for (const auto& f : files) {
    if (!f.move_from.empty()) {
      const uintmax_t size = fs::file_size(f.move_from, ec);
      UT_CHECK_TRAIN(!ec && size == f.moved_size, "checkpoint file ", f.move_from, " is ",
                     ec ? "missing" : std::to_string(size) + " bytes", ", its writer said ",
                     f.moved_size, " bytes");
      fs::rename(f.move_from, tmp + "/" + f.name, ec);
      UT_CHECK_TRAIN(!ec, "cannot move ", f.move_from, " into ", tmp, ": ", ec.message());
      listed[f.name] = {{"size", f.moved_size}, {"crc32", f.moved_crc32}};
      continue;
    }
    write_synced(tmp + "/" + f.name, f.image);
    listed[f.name] = {{"size", f.image.size()}, {"crc32", crc32_of(f.image)}};
    maybe_pause_for_tests();
  }
  manifest["files"] = listed;
  const std::string text = manifest.dump(1) + "\n";
  write_synced(tmp + "/" + kManifest, FileImage(std::vector<char>(text.begin(), text.end())));
  fsync_path(tmp, true);
}

}  // namespace

CheckpointStore::CheckpointStore(std::string root) : root_(std::move(root)) {}

int64_t CheckpointStore::step_of(const std::string& dir) {
  std::string name = fs::path(dir).filename().string();
  if (name.rfind("step-", 0) != 0 || name.size() == 5) return -1;
  int64_t step = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

std::string CheckpointStore::save(int64_t step, const std::vector<CheckpointFile>& files) const {
  std::error_code ec;
  fs::create_directories(root_, ec);
  UT_CHECK_TRAIN(!ec, "cannot create checkpoint folder ", root_, ": ", ec.message());
  const std::string final_dir = root_ + "/step-" + std::to_string(step);
  const std::string tmp = root_ + "/.partial-step-" + std::to_string(step) + "-" + writer_tag();
  fs::remove_all(tmp, ec);
  UT_CHECK_TRAIN(::mkdir(tmp.c_str(), 0755) == 0, "cannot create ", tmp, ": ", errno_text());
  try {
    write_files(tmp, step, files);
    // An older folder of the same step (a re-run after resuming from an earlier one) goes
    // aside first and only away once the new one is in place.
    std::string old_aside;
    if (fs::exists(final_dir)) {
      old_aside = root_ + "/.partial-replaced-step-" + std::to_string(step);
      fs::remove_all(old_aside, ec);
      fs::rename(final_dir, old_aside, ec);
      UT_CHECK_TRAIN(!ec, "cannot move aside ", final_dir, ": ", ec.message());
    }
    fs::rename(tmp, final_dir, ec);
    if (ec && !old_aside.empty()) {
      std::error_code back_ec;
      fs::rename(old_aside, final_dir, back_ec);  // the older copy goes back where it was
    }
    UT_CHECK_TRAIN(!ec, "cannot rename ", tmp, " to ", final_dir, ": ", ec.message());
    fsync_path(root_, true);
    if (!old_aside.empty()) fs::remove_all(old_aside, ec);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  return final_dir;
}

std::string CheckpointStore::write_new(const std::string& dir, int64_t step,
                                       const std::vector<CheckpointFile>& files) {
  std::error_code ec;
  UT_CHECK_TRAIN(!fs::exists(dir, ec), dir,
                 " exists already; choose a new path (nothing is "
                 "overwritten)");
  const fs::path parent = fs::absolute(dir).parent_path();
  fs::create_directories(parent, ec);
  UT_CHECK_TRAIN(!ec, "cannot create ", parent.string(), ": ", ec.message());
  const std::string tmp = dir + ".partial-" + std::to_string(::getpid());
  fs::remove_all(tmp, ec);
  UT_CHECK_TRAIN(::mkdir(tmp.c_str(), 0755) == 0, "cannot create ", tmp, ": ", errno_text());
  try {
    write_files(tmp, step, files);
    fs::rename(tmp, dir, ec);
    UT_CHECK_TRAIN(!ec, "cannot rename ", tmp, " to ", dir, ": ", ec.message());
    fsync_path(parent.string(), true);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  return dir;
}

std::vector<CheckpointRef> CheckpointStore::step_folders() const {
  std::vector<CheckpointRef> out;
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) return out;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    if (entry.is_symlink() || !entry.is_directory()) continue;
    const std::string dir = entry.path().string();
    const int64_t step = step_of(dir);
    if (step >= 0) out.push_back({dir, step});
  }
  std::sort(out.begin(), out.end(),
            [](const CheckpointRef& a, const CheckpointRef& b) { return a.step < b.step; });
  return out;
}

std::vector<CheckpointRef> CheckpointStore::list() const {
  std::vector<CheckpointRef> out;
  for (const CheckpointRef& ref : step_folders()) {
    nlohmann::json m = manifest_of(ref.dir);
    if (m.is_null()) continue;
    bool sizes_ok = true;
    for (const auto& [name, info] : m["files"].items()) {
      std::error_code size_ec;
      auto size = fs::file_size(ref.dir + "/" + name, size_ec);
      sizes_ok &= !size_ec && info.value("size", uint64_t(0)) == size;
    }
    if (sizes_ok) out.push_back(ref);
  }
  return out;
}

std::string CheckpointStore::verify(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "checkpoint folder " + dir + " does not exist";
  nlohmann::json m = manifest_of(dir);
  if (m.is_null()) {
    return "checkpoint " + dir + " has no valid " + kManifest +
           " (the save did not complete, or it is not a checkpoint folder)";
  }
  for (const auto& [name, info] : m["files"].items()) {
    const std::string path = dir + "/" + name;
    std::error_code size_ec;
    auto size = fs::file_size(path, size_ec);
    if (size_ec) return "checkpoint file " + path + " is missing";
    if (size != info.value("size", uint64_t(0))) {
      return detail::concat("checkpoint file ", path, " has ", size, " bytes, its manifest says ",
                            info.value("size", uint64_t(0)), " (truncated?)");
    }
    uint32_t crc = 0;
    try {
      crc = crc32_of_file(path);
    } catch (const TrainError& e) {  // gone since its size was read (pruned), or unreadable
      return e.what();
    }
    if (crc != info.value("crc32", uint32_t(0))) {
      return "checkpoint file " + path + " is corrupt (CRC-32 differs from its manifest)";
    }
  }
  return "";
}

std::vector<std::pair<std::string, uint64_t>> CheckpointStore::files_of(const std::string& dir) {
  std::vector<std::pair<std::string, uint64_t>> out;
  nlohmann::json m = manifest_of(dir);
  if (m.is_null()) return out;
  for (const auto& [name, info] : m["files"].items()) {
    out.emplace_back(name, info.value("size", uint64_t(0)));
  }
  return out;
}

bool CheckpointStore::has(const std::string& dir, const std::string& name) {
  nlohmann::json m = manifest_of(dir);
  return !m.is_null() && m["files"].contains(name);
}

std::vector<char> CheckpointStore::read(const std::string& dir, const std::string& name) {
  nlohmann::json m = manifest_of(dir);
  UT_CHECK_TRAIN(!m.is_null(), "checkpoint ", dir, " has no valid ", kManifest);
  const std::string path = dir + "/" + name;
  UT_CHECK_TRAIN(m["files"].contains(name), "checkpoint ", dir, " has no ", name);
  std::vector<char> bytes = read_file(path);
  const auto& info = m["files"][name];
  UT_CHECK_TRAIN(bytes.size() == info.value("size", uint64_t(0)), "checkpoint file ", path, " has ",
                 bytes.size(), " bytes, its manifest says ", info.value("size", uint64_t(0)),
                 " (truncated?)");
  UT_CHECK_TRAIN(crc32_of(bytes.data(), bytes.size()) == info.value("crc32", uint32_t(0)),
                 "checkpoint file ", path, " is corrupt (CRC-32 differs from its manifest)");
  return bytes;
}

MappedFile CheckpointStore::map(const std::string& dir, const std::string& name) {
  nlohmann::json m = manifest_of(dir);
  UT_CHECK_TRAIN(!m.is_null(), "checkpoint ", dir, " has no valid ", kManifest);
  const std::string path = dir + "/" + name;
  UT_CHECK_TRAIN(m["files"].contains(name), "checkpoint ", dir, " has no ", name);
  const auto& info = m["files"][name];
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  UT_CHECK_TRAIN(!ec, "checkpoint file ", path, " is missing or unreadable");
  UT_CHECK_TRAIN(size == info.value("size", uint64_t(0)), "checkpoint file ", path, " has ", size,
                 " bytes, its manifest says ", info.value("size", uint64_t(0)), " (truncated?)");
  UT_CHECK_TRAIN(crc32_of_file(path) == info.value("crc32", uint32_t(0)), "checkpoint file ", path,
                 " is corrupt (CRC-32 differs from its manifest)");
  try {
    return MappedFile(path, "checkpoint file");
  } catch (const ConfigError& e) {
    throw TrainError(e.what());
  }
}

void CheckpointStore::link(const std::string& name, const std::string& dir) const {
  const std::string link_path = root_ + "/" + name;
  const std::string tmp = link_path + ".partial-link";
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_directory_symlink(fs::path(dir).filename(), tmp, ec);
  UT_CHECK_TRAIN(!ec, "cannot create link ", tmp, ": ", ec.message());
  fs::rename(tmp, link_path, ec);
  UT_CHECK_TRAIN(!ec, "cannot replace link ", link_path, ": ", ec.message());
}

std::string CheckpointStore::resolve_link(const std::string& name) const {
  const std::string link_path = root_ + "/" + name;
  std::error_code ec;
  if (!fs::is_symlink(link_path, ec)) return "";
  fs::path target = fs::read_symlink(link_path, ec);
  if (ec) return "";
  std::string dir = (target.is_absolute() ? target : fs::path(root_) / target).string();
  return fs::is_directory(dir, ec) ? dir : "";
}

void CheckpointStore::prune(int64_t keep_last, const std::string& keep) const {
  if (keep_last <= 0) return;
  std::vector<CheckpointRef> all = list();
  const std::string last = resolve_link("last");
  const std::string best = resolve_link("best");
  auto same = [](const std::string& a, const std::string& b) {
    std::error_code ec;
    return !a.empty() && !b.empty() && fs::equivalent(a, b, ec);
  };
  const int64_t removable = static_cast<int64_t>(all.size()) - keep_last;
  for (int64_t i = 0; i < removable; ++i) {
    const std::string& dir = all[size_t(i)].dir;
    if (same(dir, keep) || same(dir, last) || same(dir, best)) continue;
    // Moved aside in one rename before its files go: a reader (checkpoint verify, a report)
    // sees the whole checkpoint or none of it, never a folder losing files. A prune cut short
    // leaves a .partial- folder, which the next run removes.
    std::error_code ec;
    const std::string aside =
        root_ + "/.partial-pruned-" + fs::path(dir).filename().string() + "-" + writer_tag();
    fs::rename(dir, aside, ec);
    fs::remove_all(ec ? dir : aside, ec);
  }
}

std::string CheckpointStore::writer_tag() { return std::to_string(::getpid()) + "@" + host_name(); }

bool CheckpointStore::writer_alive(const std::string& name) {
  std::string stem = name;
  if (stem.size() > 3 && stem.compare(stem.size() - 3, 3, ".pt") == 0) stem.resize(stem.size() - 3);
  const size_t at = stem.rfind('@');
  if (at == std::string::npos) return false;  // written by an unitrain that did not say who
  size_t begin = at;
  while (begin > 0 && stem[begin - 1] >= '0' && stem[begin - 1] <= '9') --begin;
  if (begin == at) return false;
  const long pid = std::atol(stem.substr(begin, at - begin).c_str());
  const std::string mine = writer_tag();
  const std::string my_host = mine.substr(mine.find('@') + 1);
  // Another machine's writer cannot be asked; the caller holds the run folder's lock, so it is
  // a rank of an earlier run on this folder, which is over. This process has written nothing
  // yet when it cleans (a reused pid, as in containers, is not a writer).
  if (stem.compare(at + 1, std::string::npos, my_host) != 0 || pid == ::getpid()) return false;
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

int CheckpointStore::remove_partial(std::vector<std::string>* in_use) const {
  int removed = 0;
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) return 0;
  std::vector<fs::path> partial;
  const std::string replaced = ".partial-replaced-";
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(replaced, 0) == 0 && !manifest_of(entry.path()).is_null() &&
        manifest_of(root_ + "/" + name.substr(replaced.size())).is_null()) {
      // A complete checkpoint moved aside by a save that replaced it and died before the new
      // one was in place: it goes back.
      std::error_code back_ec;
      fs::remove_all(root_ + "/" + name.substr(replaced.size()), back_ec);
      fs::rename(entry.path(), root_ + "/" + name.substr(replaced.size()), back_ec);
      if (!back_ec) continue;
    }
    if (name.rfind(".partial-", 0) == 0 || name.find(".partial-link") != std::string::npos) {
      if (writer_alive(name)) {  // a save still being written by a live process: not ours
        if (in_use) in_use->push_back(entry.path().string());
        continue;
      }
      partial.push_back(entry.path());
    } else if (step_of(name) >= 0 && !entry.is_symlink() && manifest_of(entry.path()).is_null()) {
      partial.push_back(entry.path());  // a step folder without a manifest was never complete
    }
  }
  for (const auto& p : partial) {
    fs::remove_all(p, ec);
    if (!ec) ++removed;
  }
  return removed;
}

}  // namespace unitrain
