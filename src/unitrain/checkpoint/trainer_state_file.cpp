#include "unitrain/checkpoint/trainer_state_file.h"

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/state_json.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

using Json = StateJson;

Json counters(const TrainState& s, bool stopped) {
  return {{"epoch", s.epoch},
          {"step", s.step},
          {"samples", s.samples},
          {"batch_in_epoch", s.batch_in_epoch},
          {"micro_in_window", s.micro_in_window},
          {"skipped_steps", s.skipped_steps},
          {"stopped", stopped}};
}

TrainState counters(const Json& st) {
  TrainState s;
  s.epoch = st.value("epoch", int64_t(0));
  s.step = st.value("step", int64_t(0));
  s.samples = st.value("samples", int64_t(0));
  s.batch_in_epoch = st.value("batch_in_epoch", int64_t(0));
  s.micro_in_window = st.value("micro_in_window", int64_t(0));
  s.skipped_steps = st.value("skipped_steps", int64_t(0));
  return s;
}

Json numbers(const std::map<std::string, double>& m) {
  Json o = Json::object();
  for (const auto& [k, v] : m) o[k] = state_number(v);
  return o;
}

std::map<std::string, double> numbers(const Json& o) {
  std::map<std::string, double> m;
  if (!o.is_object()) return m;
  for (const auto& [k, v] : o.items()) m[k] = state_double(v);
  return m;
}

Json metrics_of(const TrainerStateFile& f) {
  return {{"train", numbers(f.last_train)}, {"val", numbers(f.last_val)}};
}

/// A version 1 file's "loop" and "scheduler", as the sections of their entries hold them now.
void read_version_1(const Json& j, TrainerStateFile& f) {
  if (const auto lp = j.find("loop"); lp != j.end() && lp->is_object()) {
    Json logs = Json::object();
    for (const char* key : {"log_events", "last_val_step", "elapsed", "train_sums"}) {
      if (lp->contains(key)) logs[key] = (*lp)[key];
    }
    f.set_section("logs", logs.dump());
    if (lp->contains("best_checkpoint_value")) {
      f.set_section("checkpoints", Json{{"best_value", (*lp)["best_checkpoint_value"]}}.dump());
    }
    if (lp->contains("window_bad")) {
      f.set_section("nonfinite", Json{{"window_bad", (*lp)["window_bad"]}}.dump());
    }
  }
  if (const auto sc = j.find("scheduler"); sc != j.end() && sc->is_object() && !sc->empty()) {
    f.set_section("schedule", sc->dump());
  }
}

}  // namespace

std::string TrainerStateFile::section(const std::string& key) const {
  const auto it = sections_.find(key);
  return it == sections_.end() ? std::string() : it->second;
}

void TrainerStateFile::set_section(const std::string& key, const std::string& json) {
  const Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  UT_CHECK_TRAIN(!j.is_discarded() && j.is_object(), "trainer_state.json's section '", key,
                 "' must be a JSON object, got: ", json.substr(0, 80));
  UT_CHECK_TRAIN(sections_.emplace(key, j.dump()).second,
                 "two checkpoint entries write the "
                 "section '",
                 key, "' of trainer_state.json (give yours another key)");
}

std::string TrainerStateFile::to_json() const {
  Json j;
  j["format"] = kFormat;
  j["config_hash"] = config_hash;
  j["world_size"] = world_size;
  j["batch_size"] = batch_size;      // per process: with world_size, what a resume on
  j["accumulation"] = accumulation;  // another number of processes keeps (world_change.h)
  j["zero"] = zero;
  j["threads"] = threads;  // a resume keeps it: another count rounds differently
  j["state"] = counters(state, stopped);
  j["data_order"] = static_cast<int>(data_order);
  j["metrics"] = metrics_of(*this);
  Json sections = Json::object();
  for (const auto& [key, text] : sections_) sections[key] = Json::parse(text);
  j["sections"] = std::move(sections);
  return j.dump(1) + "\n";
}

std::string TrainerStateFile::metrics_json() const { return metrics_of(*this).dump(); }

TrainerStateFile TrainerStateFile::parse(const std::string& text, const std::string& where) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  UT_CHECK_TRAIN(!j.is_discarded() && j.is_object(), where, " is not valid JSON");
  const int format = j.value("format", 0);
  UT_CHECK_TRAIN(format == kFormat || format == 1, where, " has format version ", format,
                 "; this unitrain reads versions 1 and ", kFormat);
  TrainerStateFile f;
  try {
    f.config_hash = j.value("config_hash", std::string());
    f.world_size = j.value("world_size", int64_t(1));
    f.batch_size = j.value("batch_size", int64_t(0));
    f.accumulation = j.value("accumulation", int64_t(0));
    f.zero = j.value("zero", int64_t(0));
    f.threads = j.value("threads", int64_t(0));
    if (j.contains("state")) {
      f.state = counters(j["state"]);
      f.stopped = j["state"].value("stopped", false);
    }
    const int order = j.value("data_order", static_cast<int>(ShuffleAlgorithm::FisherYates));
    UT_CHECK_TRAIN(order == static_cast<int>(ShuffleAlgorithm::FisherYates) ||
                       order == static_cast<int>(ShuffleAlgorithm::Feistel),
                   where, ": data_order ", order,
                   " is not an order this unitrain knows (1 Fisher-Yates, 2 Feistel)");
    f.data_order = static_cast<ShuffleAlgorithm>(order);
    if (j.contains("metrics")) {
      f.last_train = numbers(j["metrics"].value("train", Json::object()));
      f.last_val = numbers(j["metrics"].value("val", Json::object()));
    }
    if (format == 1) {
      read_version_1(j, f);
    } else if (const auto sections = j.find("sections"); sections != j.end()) {
      UT_CHECK_TRAIN(sections->is_object(), where, ": sections must be an object");
      for (const auto& [key, value] : sections->items()) {
        UT_CHECK_TRAIN(value.is_object(), where, ": sections.", key, " must be an object");
        f.sections_[key] = value.dump();
      }
    }
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type
    throw TrainError(detail::concat(where, ": ", e.what()));
  }
  return f;
}

TrainerStateFile TrainerStateFile::read(const std::string& dir) {
  const std::vector<char> bytes = CheckpointStore::read(dir, checkpoint_files::kTrainerState);
  return parse(std::string(bytes.begin(), bytes.end()),
               dir + "/" + checkpoint_files::kTrainerState);
}

}  // namespace unitrain
