#include "unitrain/engine/loop/train_checkpoints.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/checkpointer.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/checkpoint/state_json.h"
#include "unitrain/core/error.h"
#include "unitrain/core/schema.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/engine/loop/periods.h"
#include "unitrain/engine/loop/run_decisions.h"
#include "unitrain/engine/loop/train_logs.h"
#include "unitrain/engine/setup/run_plan.h"
#include "unitrain/log/console.h"
#include "unitrain/log/run_logger.h"
#include "unitrain/profile/profiler.h"

namespace unitrain {
namespace files = checkpoint_files;
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kCheckpointsSection = "checkpoints";

std::string hash_of(const std::string& text) {
  return fmt::format("{:08x}", crc32_of(text.data(), text.size()));
}

}  // namespace

CheckpointSetup CheckpointSetup::of(const RunSettings& s, const Config& config, const RunPlan& plan,
                                    bool shared, bool has_callbacks) {
  CheckpointSetup c;
  c.options = s.checkpoint;
  c.root = s.run_dir + "/checkpoints";
  c.on = s.checkpoint.enabled && !s.train.test_mode;
  c.writes = c.on && plan.process == 0;
  c.shared = shared;
  c.at_window_ends = shared || s.distributed.reproducible_on();
  c.has_callbacks = has_callbacks;
  c.config_text = config.dump();
  c.world = plan.world;
  c.batch_size = plan.batch_size;      // per process: with world, what a resume on another
  c.accumulation = plan.accumulation;  // number of processes keeps (world_change.h)
  c.zero = shared && s.distributed.zero >= 1 ? s.distributed.zero : 0;
  return c;
}

TrainCheckpoints::TrainCheckpoints(CheckpointSetup setup, const TrainState& counters,
                                   RunDecisions& decisions, const TrainLogs& logs,
                                   Profiler* profiler)
    : setup_(std::move(setup)),
      counters_(counters),
      decisions_(decisions),
      logs_(logs),
      profiler_(profiler),
      best_value_(std::numeric_limits<double>::quiet_NaN()) {}

TrainCheckpoints::~TrainCheckpoints() = default;

void TrainCheckpoints::open() {
  if (setup_.writes) {
    checkpointer_ = std::make_unique<Checkpointer>(setup_.options, setup_.root);
    checkpointer_->clean_partial();  // folders of saves that a crash or SIGKILL interrupted
  }
}

void TrainCheckpoints::add(CheckpointEntry& entry, Restores when) {
  for (const std::string& name : entry.files()) {
    UT_CHECK(!files::is_builtin(name) && declared_.insert(name).second,
             "two checkpoint entries write the file '", name, "' (",
             files::is_builtin(name) ? "a name of unitrain's own" : "declared twice",
             "; Trainer::add_checkpoint_entry: give yours another file name)");
  }
  entries_.push_back(&entry);
  late_.push_back(when == Restores::AfterFitStart);
}

void TrainCheckpoints::add(CheckpointEntryPtr entry, Restores when) {
  add(*entry, when);
  owned_.push_back(std::move(entry));
}

int64_t TrainCheckpoints::saves() const { return checkpointer_ ? checkpointer_->saves() : 0; }

double TrainCheckpoints::write_seconds() const {
  return checkpointer_ ? checkpointer_->write_seconds() : 0;
}

TrainCheckpoints::SavePoint TrainCheckpoints::here() const {
  return {counters_.samples, decisions_.stop_decided(), logs_.events()};
}

void TrainCheckpoints::observe_validation(const MetricMap& val) {
  const CheckpointOptions& o = setup_.options;
  if (o.best_metric.empty()) return;
  const double v = monitored(val, o.best_metric, "checkpoint.best.metric");
  if (o.improves(v, best_value_)) {
    best_value_ = v;
    want_best_save_ = true;
  }
}

bool TrainCheckpoints::due(Periods& periods, bool force) {
  bool periodic = periods.due(Periods::Save, counters_);
  if (setup_.options.every_auto) {  // an epoch's end once saves are due, or a long epoch
    periodic = (periodic && decisions_.save_soon()) || decisions_.save_now();
  }
  return periodic || force || want_best_save_;
}

void TrainCheckpoints::save_if_due(Periods& periods, bool force) {
  if (decisions_.act_on_signal_or_pause(setup_.on)) force = true;
  if (!setup_.on) return;
  bool due_now = due(periods, force);
  // Data-parallel and reproducible runs save at window boundaries only: a save due inside one
  // waits for its end.
  if (setup_.at_window_ends && (due_now || save_pending_) && counters_.micro_in_window != 0) {
    save_pending_ = true;
    return;
  }
  due_now |= save_pending_;
  save_pending_ = false;
  if (!due_now || saved_ == here()) {
    if (want_best_save_ && saved_.samples == counters_.samples && checkpointer_) {  // just link
      checkpointer_->wait();
      checkpointer_->store().link("best", last_checkpoint_);
    }
    want_best_save_ = false;
    return;
  }
  save();
}

void TrainCheckpoints::save() {
  logs_.settle();  // the step's late non-finite check: no diverged weights saved
  Profiler::Range range(profiler_, Phase::Checkpoint);
  const Clock::time_point start = Clock::now();
  decisions_.saved();
  CheckpointWrite out;
  out.writes = checkpointer_ != nullptr;
  out.async = setup_.options.async;
  // Snapshots now, bytes later: an async save serialises on the writer thread, so training
  // waits only for the copies (the optimizer keeps training on copies of its state).
  if (out.writes && out.async) {
    checkpointer_->wait();  // the previous save no longer reads the buffers
    if (!snapshot_buffers_) snapshot_buffers_ = std::make_shared<SnapshotBuffers>(/*defer=*/true);
    out.buffers = snapshot_buffers_.get();
  }
  out.state.state = counters_;
  out.state.stopped = decisions_.stop_decided();
  for (CheckpointEntry* e : entries_) e->save(out);
  if (!out.writes) {  // another rank: rank 0 writes
    want_best_save_ = false;
    saved_ = here();
    last_checkpoint_ = fmt::format("{}/step-{}", setup_.root, counters_.step);
    return;
  }
  write(out);
  blocking_seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
}

void TrainCheckpoints::write(CheckpointWrite& out) {
  TrainerStateFile& st = out.state;
  st.config_hash = hash_of(setup_.config_text);
  st.world_size = setup_.world;
  st.batch_size = setup_.batch_size;
  st.accumulation = setup_.accumulation;
  st.zero = setup_.zero;
  st.threads = setup_.threads;
  st.data_order = setup_.data_order;
  st.set_section(kCheckpointsSection, StateJson{{"best_value", state_number(best_value_)}}.dump());
  out.add(files::kTrainerState, st.to_json());
  out.add(files::kConfig, setup_.config_text);
  if (!setup_.classes_text.empty()) out.add(files::kClasses, setup_.classes_text);
  std::set<std::string> names;
  for (const CheckpointFile& f : out.files) {
    UT_CHECK_TRAIN(names.insert(f.name).second, "two checkpoint entries write the file '", f.name,
                   "' (Trainer::add_checkpoint_entry: give yours another file name)");
  }
  CheckpointSave save;
  save.step = counters_.step;
  save.files = std::move(out.files);
  save.best = want_best_save_;
  // Parameters and optimizer state are copied on the writer thread while the next forward and
  // backward run; the step runner waits for those copies before the optimizer changes them.
  if (out.buffers) save.snapshot = out.buffers->take_copies();
  want_best_save_ = false;
  checkpointer_->save(std::move(save));
  // Callbacks may change parameters outside optimizer steps: with any, the copies are made
  // before training goes on.
  if (setup_.has_callbacks) checkpointer_->wait_snapshot();
  saved_ = here();
  last_checkpoint_ = fmt::format("{}/step-{}", checkpointer_->store().root(), counters_.step);
  log::file_only(fmt::format("checkpoint step-{} ({})", counters_.step,
                             out.async ? "writing in the background" : "written"));
}

void TrainCheckpoints::restore(const ResumePoint& resume, int64_t batches_per_epoch, int rank,
                               const char* how, Which which) {
  const std::string& dir = resume.dir;
  // Said once (a rollback restores again); a key that changes training is a warning: from here
  // on the run is not the one it would have been.
  if (!changes_said_) {
    const auto schema = run_schema();
    for (const auto& c : resume.config_changes) {
      // (A longer max_length continues the run; its effect on a schedule is said by the lr
      // controller.)
      if (schema->resume_rule(c.key).on == OnResume::Harmless || c.key == "train.max_length") {
        log::info("config changed since the checkpoint: " + c.str());
      } else {
        log::warn(
            fmt::format("config changed since the checkpoint: {} (it applies from step {} "
                        "on: the run trains otherwise than it would have)",
                        c.str(), resume.file.state.step + 1));
      }
    }
    changes_said_ = true;
  }
  const TrainState& saved = resume.file.state;
  UT_CHECK(saved.batch_in_epoch <= batches_per_epoch, "cannot resume from ", dir,
           ": it stopped at batch ", saved.batch_in_epoch, " of an epoch that now has ",
           batches_per_epoch, " batches");
  best_value_ = state_double(state_section(resume.file.section(kCheckpointsSection))
                                 .value("best_value", StateJson("nan")));
  const CheckpointRead in{dir, resume.file, rank};
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (which == Which::All || !late_[i]) entries_[i]->restore(in);
  }
  saved_ = here();
  last_checkpoint_ = dir;
  log::info(fmt::format("{} {}: epoch {}, step {}, batch {} of the epoch, {} samples seen", how,
                        dir, saved.epoch, saved.step, saved.batch_in_epoch, saved.samples));
}

void TrainCheckpoints::restore_late(const ResumePoint& resume, int rank) {
  const CheckpointRead in{resume.dir, resume.file, rank};
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (late_[i]) entries_[i]->restore(in);
  }
}

std::string TrainCheckpoints::rollback_point() {
  if (checkpointer_) checkpointer_->wait();
  return last_checkpoint_;
}

void TrainCheckpoints::fence() {
  Profiler::Range range(profiler_, Phase::Checkpoint);
  if (checkpointer_) checkpointer_->wait_snapshot();
}

void TrainCheckpoints::finish() {
  if (!checkpointer_) return;
  checkpointer_->wait();
  blocking_seconds_ += checkpointer_->snapshot_wait_seconds();  // at the fence
  log::file_only(
      fmt::format("checkpoints: {} saved; training waited {:.2f} s for them, writing "
                  "took {:.2f} s",
                  checkpointer_->saves(), blocking_seconds_, checkpointer_->write_seconds()));
}

}  // namespace unitrain
