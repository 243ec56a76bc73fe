#include "unitrain/checkpoint/checkpoint_tools.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/model_shards.h"
#include "unitrain/checkpoint/optimizer_merge.h"
#include "unitrain/checkpoint/safetensors.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/checkpoint/trainer_state_file.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace fs = std::filesystem;
namespace {

namespace files = checkpoint_files;

bool is_partition(const std::string& name) { return name.rfind(files::kPartitionPrefix, 0) == 0; }

std::string human_size(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f} KB", bytes / 1024.0);
  if (bytes < 1024ull * 1024 * 1024) return fmt::format("{:.1f} MB", bytes / 1048576.0);
  return fmt::format("{:.2f} GB", bytes / 1073741824.0);
}

/// The checkpoint folders `path` holds: itself, or the step-<S> folders of a checkpoints/
/// folder or run_dir.
std::vector<std::string> step_folders(const std::string& path) {
  std::error_code ec;
  if (fs::exists(fs::path(path) / "MANIFEST.json", ec)) return {path};
  std::string root = path;
  if (fs::is_directory(fs::path(path) / "checkpoints", ec)) root = path + "/checkpoints";
  std::vector<std::pair<int64_t, std::string>> found;
  if (fs::is_directory(root, ec)) {
    for (const auto& e : fs::directory_iterator(root, ec)) {
      const int64_t step = CheckpointStore::step_of(e.path().string());
      if (step >= 0 && e.is_directory() && !e.is_symlink())
        found.emplace_back(step, e.path().string());
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [step, dir] : found) out.push_back(dir);
  return out;
}

}  // namespace

std::string checkpoint_folder(const std::string& path) {
  std::error_code ec;
  UT_CHECK(fs::exists(path, ec), "checkpoint: ", path, " does not exist");
  if (fs::exists(fs::path(path) / "MANIFEST.json", ec)) return path;
  for (const std::string& root : {path + "/checkpoints", path}) {
    if (fs::exists(root + "/last", ec)) return CheckpointStore(root).resolve_link("last");
  }
  throw ConfigError(detail::concat("checkpoint: ", path,
                                   " is not a checkpoint folder (no "
                                   "MANIFEST.json), nor a run_dir or checkpoints/ folder with a "
                                   "`last` checkpoint"));
}

std::string inspect_checkpoint(const std::string& path, bool json) {
  const std::string dir = checkpoint_folder(path);
  const TrainerStateFile f = TrainerStateFile::read(dir);
  nlohmann::ordered_json out;
  out["checkpoint"] = dir;
  out["step"] = f.state.step;
  out["epoch"] = f.state.epoch;
  out["samples"] = f.state.samples;
  out["batch_in_epoch"] = f.state.batch_in_epoch;
  out["micro_in_window"] = f.state.micro_in_window;
  out["world_size"] = f.world_size;
  out["batch_size"] = f.batch_size;
  out["accumulation"] = f.accumulation;
  out["zero"] = f.zero;
  out["config_hash"] = f.config_hash;
  out["stopped"] = f.stopped;
  out["metrics"] = nlohmann::ordered_json::parse(f.metrics_json());
  nlohmann::ordered_json files = nlohmann::ordered_json::object();
  for (const auto& [name, size] : CheckpointStore::files_of(dir)) files[name] = size;
  out["files"] = files;
  if (json) return out.dump(1) + "\n";

  std::ostringstream s;
  s << "checkpoint " << dir << "\n";
  s << fmt::format("  step {}, epoch {} completed, {} samples seen, batch {} of its epoch{}\n",
                   out["step"].get<int64_t>(), out["epoch"].get<int64_t>(),
                   out["samples"].get<int64_t>(), out["batch_in_epoch"].get<int64_t>(),
                   out["stopped"].get<bool>() ? " (the run stopped early)" : "");
  s << fmt::format("  {} process(es), batch {} per process, accumulation {}, distributed.zero {}\n",
                   out["world_size"].get<int64_t>(), out["batch_size"].get<int64_t>(),
                   out["accumulation"].get<int64_t>(), out["zero"].get<int64_t>());
  s << "  config hash " << out["config_hash"].get<std::string>() << "\n";
  for (const char* split : {"train", "val"}) {
    if (!out["metrics"].contains(split) || out["metrics"][split].empty()) continue;
    s << "  " << split << " metrics at save:";
    for (const auto& [k, v] : out["metrics"][split].items()) s << " " << k << "=" << v.dump();
    s << "\n";
  }
  s << "  files:\n";
  uint64_t total = 0;
  for (const auto& [name, size] : CheckpointStore::files_of(dir)) {
    s << fmt::format("    {:<24} {:>10}\n", name, human_size(size));
    total += size;
  }
  s << fmt::format("    {:<24} {:>10}\n", "(total)", human_size(total));
  return s.str();
}

int verify_checkpoints(const std::string& path, std::string& report) {
  std::error_code ec;
  UT_CHECK(fs::exists(path, ec), "checkpoint verify: ", path, " does not exist");
  const std::vector<std::string> dirs = step_folders(path);
  UT_CHECK(!dirs.empty(), "checkpoint verify: ", path,
           " holds no checkpoint (no MANIFEST.json, "
           "no step-<S> folders)");
  int bad = 0;
  for (const std::string& dir : dirs) {
    const std::string problem = CheckpointStore::verify(dir);
    if (!problem.empty() && !fs::exists(dir, ec)) {
      // A run training into this folder pruned it (checkpoint.keep_last) while we read it.
      report += dir + ": removed while being verified (the run's checkpoint.keep_last pruned it)\n";
      continue;
    }
    report += dir + ": " + (problem.empty() ? "ok" : problem) + "\n";
    bad += !problem.empty();
  }
  return bad;
}

std::string merge_checkpoint(const std::string& path, const std::string& out,
                             const std::string& format) {
  UT_CHECK(format == "checkpoint" || format == "safetensors", "--format ", format,
           ": give checkpoint or safetensors");
  const std::string dir = checkpoint_folder(path);
  std::error_code ec;  // bad input is named before anything is read (exit 2)
  const fs::path folder = fs::path(out).has_parent_path() ? fs::path(out).parent_path() : ".";
  UT_CHECK(fs::is_directory(folder, ec), "--out ", out, ": the folder ", folder.string(),
           " does not exist (create it first)");
  UT_CHECK(!fs::exists(out, ec), "--out ", out,
           " exists already; choose a new path (nothing is overwritten)");
  if (format == "safetensors") {
    const NamedTensors model = read_model_state(dir);  // distributed.zero: 3's parts merged
    const int64_t step = TrainerStateFile::read(dir).state.step;
    write_safetensors(out, model, {{"format", "pt"}, {"unitrain.step", std::to_string(step)}});
    return out;
  }
  if (has_model_shards(dir)) {
    // distributed.zero: 3: the model's parts merged into model.pt, a callback's per-parameter
    // state (the ema callback's average) into its entry (extra-ema.pt); the rest as it is (its
    // optimizer state is by parts of flattened parameters, which a run with distributed.zero: 3
    // re-cuts at any world size).
    std::vector<CheckpointFile> merged;
    merged.push_back({files::kModel, save_tensor_dict(merge_model_shards(dir)), nullptr});
    for (const std::string& state : sharded_state_names(dir)) {
      const std::string entry = std::string(files::kCallbackPrefix) + files::state_entry(state);
      if (CheckpointStore::has(dir, entry)) continue;
      merged.push_back({entry,
                        save_tensor_dict(merge_model_shards(
                            dir, [&](int rank) { return files::state_shard(state, rank); })),
                        nullptr});
    }
    for (const auto& [name, size] : CheckpointStore::files_of(dir)) {
      if (name != files::kModel)
        merged.push_back({name, CheckpointStore::read(dir, name), nullptr});
    }
    return CheckpointStore::write_new(out, TrainerStateFile::read(dir).state.step, merged);
  }
  std::vector<OptimizerFile> partitions;
  for (int r = 0; CheckpointStore::has(dir, files::optimizer_partition(r)); ++r) {
    const std::string name = files::optimizer_partition(r);
    partitions.push_back({CheckpointStore::read(dir, name), dir + "/" + name});
  }
  UT_CHECK(!partitions.empty(), dir, " holds no optimizer partitions (", files::kPartitionPrefix,
           "<R>.pt): its optimizer state is one file already, nothing to merge (it resumes on "
           "any number of processes as it is; --format safetensors writes its model)");
  std::vector<CheckpointFile> merged;
  merged.push_back({files::kOptimizer, merge_optimizer_files(partitions), nullptr});
  for (const auto& [name, size] : CheckpointStore::files_of(dir)) {
    if (!is_partition(name)) merged.push_back({name, CheckpointStore::read(dir, name), nullptr});
  }
  const int64_t step = TrainerStateFile::read(dir).state.step;
  return CheckpointStore::write_new(out, step, merged);
}

}  // namespace unitrain
