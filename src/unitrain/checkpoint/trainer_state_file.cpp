#include "unitrain/checkpoint/trainer_state_file.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

using Json = nlohmann::ordered_json;

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
  for (const auto& [k, v] : m) o[k] = number(v);
  return o;
}

std::map<std::string, double> numbers(const Json& o) {
  std::map<std::string, double> m;
  if (!o.is_object()) return m;
  for (const auto& [k, v] : o.items()) m[k] = number(v);
  return m;
}

Json metrics_of(const TrainerStateFile& f) {
  return {{"train", numbers(f.last_train)}, {"val", numbers(f.last_val)}};
}

Json loop_of(const TrainerStateFile& f) {
  Json sums = Json::object();
  for (const auto& [name, sum] : f.train_sums) {
    sums[name] = {number(sum.weighted), number(sum.weight), sum.exp_of_mean};
  }
  return {{"log_events", f.log_events}, {"last_val_step", f.last_val_step},
          {"elapsed", f.elapsed},       {"best_checkpoint_value", number(f.best_value)},
          {"window_bad", f.window_bad}, {"train_sums", sums}};
}

void read_loop(const Json& lp, TrainerStateFile& f, const std::string& where) {
  if (!lp.is_object()) return;
  f.log_events = lp.value("log_events", int64_t(0));
  f.last_val_step = lp.value("last_val_step", int64_t(-1));
  f.elapsed = lp.value("elapsed", 0.0);
  if (lp.contains("best_checkpoint_value")) f.best_value = number(lp["best_checkpoint_value"]);
  f.window_bad = lp.value("window_bad", false);
  if (!lp.contains("train_sums")) return;
  for (const auto& [name, v] : lp["train_sums"].items()) {
    UT_CHECK_TRAIN(v.is_array() && v.size() == 3 && v.at(2).is_boolean(), where,
                   ": loop.train_sums.", name, " must be [weighted, weight, exp_of_mean]");
    f.train_sums[name] = {number(v.at(0)), number(v.at(1)), v.at(2).get<bool>()};
  }
}

}  // namespace

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
  j["loop"] = loop_of(*this);
  j["scheduler"] = numbers(scheduler);
  return j.dump(1) + "\n";
}

std::string TrainerStateFile::metrics_json() const { return metrics_of(*this).dump(); }

TrainerStateFile TrainerStateFile::parse(const std::string& text, const std::string& where) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  UT_CHECK_TRAIN(!j.is_discarded() && j.is_object(), where, " is not valid JSON");
  UT_CHECK_TRAIN(j.value("format", 0) == kFormat, where, " has format version ",
                 j.value("format", 0), "; this unitrain reads version ", kFormat);
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
    if (j.contains("loop")) read_loop(j["loop"], f, where);
    if (j.contains("scheduler")) f.scheduler = numbers(j["scheduler"]);
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
