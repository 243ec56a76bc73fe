// Saving and restoring the Trainer's loop: what a checkpoint holds and how a run resumes.
#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/engine/stop_signal.h"
#include "unitrain/engine/trainer_loop.h"
#include "unitrain/log/console.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/reduce_metrics.h"

namespace unitrain {
namespace {

constexpr int kFormatVersion = 1;
constexpr const char* kState = "trainer_state.json";
constexpr const char* kExtraPrefix = "extra-";
constexpr const char* kLossScaler = "loss_scaler.json";

using Json = nlohmann::ordered_json;

// JSON has no NaN or infinity; they travel as strings. Finite doubles round-trip exactly.
Json number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

double number(const Json& j) {
  if (j.is_number()) return j.get<double>();
  const std::string s = j.is_string() ? j.get<std::string>() : "nan";
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  return std::numeric_limits<double>::quiet_NaN();
}

std::vector<char> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

std::string hash_of(const std::string& text) {
  return fmt::format("{:08x}", crc32_of(text.data(), text.size()));
}

std::string read_state_text(const std::string& dir) {
  const std::vector<char> bytes = CheckpointStore::read(dir, kState);
  return std::string(bytes.begin(), bytes.end());
}

Json parse_state_json(const std::string& text, const std::string& dir) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  UT_CHECK_TRAIN(!j.is_discarded() && j.is_object(), dir, "/", kState, " is not valid JSON");
  UT_CHECK_TRAIN(j.value("format", 0) == kFormatVersion, dir, "/", kState, " has format version ",
                 j.value("format", 0), "; this unitrain reads version ", kFormatVersion);
  return j;
}

/// The counters of a trainer_state.json.
TrainState train_state_of(Json st) {
  TrainState s;
  s.epoch = st.value("epoch", int64_t(0));
  s.step = st.value("step", int64_t(0));
  s.samples = st.value("samples", int64_t(0));
  s.batch_in_epoch = st.value("batch_in_epoch", int64_t(0));
  s.micro_in_window = st.value("micro_in_window", int64_t(0));
  s.skipped_steps = st.value("skipped_steps", int64_t(0));
  s.should_stop = st.value("stopped", false);
  return s;
}

std::string shard_name(int rank) { return "optimizer-rank-" + std::to_string(rank) + ".pt"; }

/// ZeRO: every rank's optimizer partition goes into the checkpoint as optimizer-rank-<R>.pt.
/// The ranks other than 0 write theirs now, beside the checkpoints (a .partial- file: a save
/// that fails leaves it to clean_partial), and tell rank 0 its path, size and CRC in an
/// all-gather that is also the barrier: rank 0 lists the files once all are written, and its
/// save moves them into the checkpoint folder. A rank that cannot write says so instead, and
/// every rank fails naming it (none waits for a file that will not come).
std::vector<CheckpointFile> write_optimizer_partitions(ProcessGroup& group,
                                                       const torch::optim::Optimizer& optimizer,
                                                       const std::string& root, int64_t step) {
  std::string mine;
  if (group.rank() != 0) {
    const std::string path = fmt::format("{}/.partial-optimizer-step-{}-rank-{}-{}.pt", root,
                                         step, group.rank(), CheckpointStore::writer_tag());
    try {
      std::error_code ec;
      std::filesystem::create_directories(root, ec);
      const FileImage image(save_optimizer_state(optimizer));
      write_synced(path, image);
      mine = fmt::format("{}\n{}\n{}", image.size(), crc32_of(image), path);
    } catch (const std::exception& e) {
      mine = "!" + error_text(e);
    }
  }
  const std::vector<std::string> all = group.all_gather(mine);
  std::vector<CheckpointFile> files;
  for (int r = 1; r < group.world_size(); ++r) {
    const std::string& said = all[static_cast<size_t>(r)];
    UT_CHECK_TRAIN(said.empty() || said[0] != '!', "rank ", r, " could not write its optimizer "
                   "partition for the checkpoint of step ", step, ": ", said.substr(1));
    std::istringstream in(said);
    CheckpointFile f;
    f.name = shard_name(r);
    std::string size, crc;
    std::getline(in, size);
    std::getline(in, crc);
    std::getline(in, f.move_from);
    f.moved_size = std::stoull(size);
    f.moved_crc32 = static_cast<uint32_t>(std::stoul(crc));
    files.push_back(std::move(f));
  }
  return files;
}

}  // namespace

ResumePoint read_resume_point(const std::string& dir, const Config& current) {
  ResumePoint r;
  if (dir.empty()) return r;
  r.dir = dir;
  r.config_changes = check_resume_config(read_checkpoint_config(dir), current, dir);
  r.state_text = read_state_text(dir);
  Json j = parse_state_json(r.state_text, dir);
  r.log_events = j["loop"].value("log_events", int64_t(0));
  r.world_size = j.value("world_size", int64_t(1));
  r.batch_size = j.value("batch_size", int64_t(0));
  r.accumulation = j.value("accumulation", int64_t(0));
  r.state = train_state_of(j["state"]);
  return r;
}

void Trainer::Loop::save_if_due(bool force) {
  const bool on = settings.checkpoint.enabled && !settings.train.test_mode;
  if (const int sig = stop_signal(); sig != 0 && result.signal == 0) {
    result.signal = sig;
    log::warn(fmt::format("received signal {} ({}): {} and stopping", sig, strsignal(sig),
                          on ? "saving a checkpoint" : "checkpoints are off,"));
    force = true;
  }
  if (pause_requested() && result.paused.empty() && result.signal == 0) {
    result.paused = trainer.pause_reason_.empty() ? "another rank asked to pause" : trainer.pause_reason_;
    log::info(fmt::format("pausing ({}): {}; run the same command again to resume", result.paused,
                          on ? "saving a checkpoint" : "checkpoints are off, nothing to resume from"));
    force = true;
  }
  if (!on) return;
  bool periodic = periods.due(Periods::Save, state);
  if (settings.checkpoint.every_auto) {  // an epoch's end once saves are due, or a long epoch
    periodic = (periodic && auto_save_soon) || auto_save_now;
  }
  bool due = periodic || force || want_best_save;
  // Data-parallel runs save at window boundaries only (gradients inside a window are each
  // rank's own): a save due inside one waits for its end.
  if (group && (due || save_pending) && state.micro_in_window != 0) {
    save_pending = true;
    return;
  }
  due |= save_pending;
  save_pending = false;
  if (!due || saved == here()) {
    if (want_best_save && saved.samples == state.samples && checkpointer) {  // just link
      checkpointer->wait();
      checkpointer->store().link("best", result.last_checkpoint);
    }
    want_best_save = false;
    return;
  }
  save();
}

void Trainer::Loop::save() {
  Profiler::Range range(profiler.get(), Phase::Checkpoint);
  const Clock::time_point start = Clock::now();
  last_save_time = start;
  auto_save_soon = auto_save_now = false;
  TrainState& s = state;
  torch::nn::Module& weights = module.weights();
  // Every rank's generator state goes to rank 0, which writes the checkpoint; so do the
  // running training sums (a resumed rank 0 carries them for everyone).
  const std::vector<char> my_rng = save_tensor_dict(rng_state());
  std::vector<std::string> rng_files{std::string(my_rng.begin(), my_rng.end())};
  MetricAccumulator sums_to_save = train_sums;
  if (group) {
    rng_files = group->all_gather(rng_files[0]);
    all_reduce_metrics(*group, sums_to_save);
  }
  std::vector<CheckpointFile> partitions;
  if (sharding) {
    partitions = write_optimizer_partitions(*group, *trainer.optimizer_,
                                            settings.run_dir + "/checkpoints", s.step);
  }
  const std::string this_dir = settings.run_dir + "/checkpoints/step-" + std::to_string(s.step);
  if (!checkpointer) {  // another rank: rank 0 writes
    want_best_save = false;
    saved = here();
    result.last_checkpoint = this_dir;
    return;
  }
  std::vector<CheckpointFile> files;
  // Snapshots now, bytes later: an async save serialises on the writer thread, so training
  // waits only for the copies (the optimizer keeps training on copies of its state).
  const bool async = settings.checkpoint.async;
  SnapshotBuffers* buffers = nullptr;
  if (async) {
    checkpointer->wait();  // the previous save no longer reads the buffers
    if (!snapshot_buffers) snapshot_buffers = std::make_shared<SnapshotBuffers>(/*defer=*/true);
    buffers = snapshot_buffers.get();
  }
  // bf16-true: the float32 master weights (and buffers widened), not the bfloat16 copies.
  const MasterWeights* masters = trainer.precision_->masters();
  auto model_state = std::make_shared<NamedTensors>(
      masters ? named_state(masters->parameters(), masters->buffers(), async, buffers)
              : module_state(weights, async, buffers));
  files.push_back({"model.pt", {}, [model_state] { return tensor_dict_image(*model_state); }});
  files.push_back({sharding ? shard_name(0) : "optimizer.pt", {},
                   optimizer_state_snapshot(*trainer.optimizer_, async, buffers)});
  for (CheckpointFile& f : partitions) files.push_back(std::move(f));
  for (size_t r = 0; r < rng_files.size(); ++r) {
    files.push_back({"rng-rank-" + std::to_string(r) + ".pt",
                     std::vector<char>(rng_files[r].begin(), rng_files[r].end())});
  }
  if (s.micro_in_window != 0) {
    files.push_back({"grads.pt", tensor_dict_image(gradient_state(module))});
  }
  if (const LossScaler* scaler = trainer.precision_->scaler()) {
    files.push_back({kLossScaler, bytes_of(scaler->state_json())});
  }
  CheckpointEntries extra;
  hooks.call("on_save_checkpoint", &Callback::on_save_checkpoint, extra);
  for (const auto& [name, bytes] : extra) {
    UT_CHECK_TRAIN(!name.empty() && name.find('/') == std::string::npos, "a callback's checkpoint ",
                   "entry name must be a plain file name, got '", name, "'");
    files.push_back({kExtraPrefix + name, bytes_of(bytes)});
  }

  Json j;
  j["format"] = kFormatVersion;
  j["config_hash"] = hash_of(trainer.config_.dump());
  j["world_size"] = plan.world;
  j["batch_size"] = plan.batch_size;      // per process: with world_size, what a resume on
  j["accumulation"] = plan.accumulation;  // another number of processes keeps (world_change.h)
  j["zero"] = sharding ? settings.distributed.zero : 0;  // >= 1: optimizer-rank-<R>.pt files
  j["state"] = {{"epoch", s.epoch},
                {"step", s.step},
                {"samples", s.samples},
                {"batch_in_epoch", s.batch_in_epoch},
                {"micro_in_window", s.micro_in_window},
                {"skipped_steps", s.skipped_steps},
                {"stopped", s.should_stop}};
  // The last metrics logged, so that a finished run describes itself when resumed.
  Json metrics = {{"train", Json::object()}, {"val", Json::object()}};
  for (const auto& [k, v] : result.last_train) metrics["train"][k] = number(v);
  for (const auto& [k, v] : result.last_val) metrics["val"][k] = number(v);
  j["metrics"] = metrics;
  Json sums = Json::object();
  for (const auto& [name, sum] : sums_to_save.sums()) {
    sums[name] = {number(sum.weighted), number(sum.weight), sum.exp_of_mean};
  }
  j["loop"] = {{"log_events", logger.events()},
               {"last_val_step", last_val_step},
               {"elapsed", elapsed()},
               {"best_checkpoint_value", number(best_value)},
               {"window_bad", steps->window_bad()},
               {"train_sums", sums}};
  Json sched = Json::object();
  if (Scheduler* sc = lr->scheduler()) {
    for (const auto& [k, v] : sc->state()) sched[k] = number(v);
  }
  j["scheduler"] = sched;
  files.push_back({kState, bytes_of(j.dump(1) + "\n")});
  files.push_back({"config.yaml", bytes_of(trainer.config_.dump())});

  CheckpointSave save;
  save.step = s.step;
  save.files = std::move(files);
  save.best = want_best_save;
  // Parameters and optimizer state are copied on the writer thread while the next forward and
  // backward run; the step runner waits for those copies before the optimizer changes them.
  if (buffers) save.snapshot = buffers->take_copies();
  want_best_save = false;
  checkpointer->save(std::move(save));
  // Callbacks may change parameters outside optimizer steps: with any, the copies are made
  // before training goes on.
  if (!hooks.empty()) checkpointer->wait_snapshot();
  result.checkpoint_blocking_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  saved = here();
  result.last_checkpoint = checkpointer->store().root() + "/step-" + std::to_string(s.step);
  log::file_only(fmt::format("checkpoint step-{} ({})", s.step,
                             settings.checkpoint.async ? "writing in the background" : "written"));
}

void Trainer::Loop::restore_model(const std::string& dir) {
  const std::string file = dir + "/model.pt";
  NamedTensors state = load_tensor_dict(CheckpointStore::read(dir, "model.pt"), file);
  MasterWeights* masters = trainer.precision_->masters();
  if (!masters) {
    load_module_state(module.weights(), state, /*strict=*/true, file);
    return;
  }
  // bf16-true: the module takes the weights in bfloat16 (names and shapes checked there), the
  // masters the float32 values.
  NamedTensors low = state;
  for (auto& [name, t] : low) {
    if (t.is_floating_point()) t = t.to(torch::kBFloat16);
  }
  load_module_state(module.weights(), low, /*strict=*/true, file);
  masters->load(state);
}

void Trainer::Loop::restore_optimizer(const std::string& dir) {
  // optimizer.pt, or a ZeRO run's partitions (from any number of ranks): this run takes what
  // it needs (with ZeRO, its own partition's state).
  std::vector<OptimizerFile> files;
  if (CheckpointStore::has(dir, "optimizer.pt")) {
    files.push_back({CheckpointStore::read(dir, "optimizer.pt"), dir + "/optimizer.pt"});
  } else {
    for (int r = 0; CheckpointStore::has(dir, shard_name(r)); ++r) {
      files.push_back({CheckpointStore::read(dir, shard_name(r)), dir + "/" + shard_name(r)});
    }
  }
  UT_CHECK_TRAIN(!files.empty(), dir, " holds no optimizer state (optimizer.pt or ",
                 shard_name(0), ")");
  load_optimizer_state(*trainer.optimizer_, files);
  if (sharding) sharding->drop_foreign_state();
}

void Trainer::Loop::restore(const ResumePoint& resume) {
  const std::string& dir = resume.dir;
  for (const auto& c : resume.config_changes) {
    log::info("config changed since the checkpoint: " + c.str());
  }
  Json j = parse_state_json(resume.state_text, dir);
  const std::string what = dir + "/";
  restore_model(dir);
  restore_optimizer(dir);
  if (CheckpointStore::has(dir, "grads.pt")) {
    load_gradient_state(module, load_tensor_dict(CheckpointStore::read(dir, "grads.pt"),
                                                 what + "grads.pt"), what + "grads.pt");
  }

  TrainState& s = state;
  s = resume.state;
  periods.start_at(s);
  UT_CHECK(s.batch_in_epoch <= plan.batches_per_epoch, "cannot resume from ", dir, ": it stopped at batch ",
           s.batch_in_epoch, " of an epoch that now has ", plan.batches_per_epoch, " batches");

  const Json& lp = j["loop"];
  last_val_step = lp.value("last_val_step", int64_t(-1));
  time_offset = lp.value("elapsed", 0.0);
  best_value = number(lp["best_checkpoint_value"]);
  steps->set_window_bad(lp.value("window_bad", false));
  train_sums.clear();
  // Saved summed over ranks: rank 0 carries them, the others start from nothing.
  const Json no_sums = Json::object();
  const Json& saved_sums = plan.rank == 0 ? lp["train_sums"] : no_sums;
  for (const auto& [name, v] : saved_sums.items()) {
    auto& sum = train_sums.sums()[name];
    sum.weighted = number(v.at(0));
    sum.weight = number(v.at(1));
    sum.exp_of_mean = v.at(2).get<bool>();
  }
  if (Scheduler* sc = lr->scheduler()) {
    std::map<std::string, double> state;
    for (const auto& [k, v] : j["scheduler"].items()) state[k] = number(v);
    if (!state.empty()) sc->load_state(state);
  }
  lr->follow(s);

  CheckpointEntries extra;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kExtraPrefix, 0) == 0 && CheckpointStore::has(dir, name)) {
      std::vector<char> b = CheckpointStore::read(dir, name);
      extra[name.substr(std::string(kExtraPrefix).size())] = std::string(b.begin(), b.end());
    }
  }
  hooks.call("on_load_checkpoint", &Callback::on_load_checkpoint, extra);
  if (LossScaler* scaler = trainer.precision_->scaler()) {
    if (CheckpointStore::has(dir, kLossScaler)) {
      const std::vector<char> b = CheckpointStore::read(dir, kLossScaler);
      scaler->load_state_json(std::string(b.begin(), b.end()), what + kLossScaler);
    } else {
      log::info(fmt::format("{} has no loss scaler state (saved with another train.precision): "
                            "the loss scale starts at {}", dir, scaler->scale()));
    }
  }

  // A rank the checkpoint had restores its generators; a rank it did not have (a resume on
  // more processes) keeps the one seeded at the start, seed + rank, as a fresh run's would be.
  const std::string rng_file = "rng-rank-" + std::to_string(plan.rank) + ".pt";
  if (plan.rank < resume.world_size) {
    load_rng_state(load_tensor_dict(CheckpointStore::read(dir, rng_file), what + rng_file),
                   what + rng_file);
  } else {
    log::info(fmt::format("{} has no generator state of rank {} (it was written by {} "
                          "process(es)): rank {} keeps its generator seeded with seed + rank",
                          dir, plan.rank, resume.world_size, plan.rank));
  }
  if (j.contains("metrics")) {
    for (const auto& [k, v] : j["metrics"]["train"].items()) result.last_train[k] = number(v);
    for (const auto& [k, v] : j["metrics"]["val"].items()) result.last_val[k] = number(v);
  }
  saved = here();
  result.resumed_from = dir;
  result.last_checkpoint = dir;
  log::info(fmt::format("resumed from {}: epoch {}, step {}, batch {} of the epoch, {} samples seen",
                        dir, s.epoch, s.step, s.batch_in_epoch, s.samples));
}

}  // namespace unitrain
