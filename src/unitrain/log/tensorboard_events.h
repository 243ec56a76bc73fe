#pragma once
// The records of a TensorBoard event file, serialized: the tensorboard tracker frames each one
// with tfrecord_frame(). The protocol buffers (log/proto/*.proto) stay inside the .cpp.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace unitrain::tensorboard {

/// The first record of every event file: file_version "brain.Event:2".
std::string file_version_event(double wall_time);

/// One scalar summary per metric (tag = metric key, float value) at `step`.
std::string scalars_event(double wall_time, int64_t step,
                          const std::map<std::string, double>& values);

/// A text-plugin summary: `markdown` as a string tensor under `tag`.
std::string text_event(double wall_time, int64_t step, const std::string& tag,
                       const std::string& markdown);

/// SessionLog START at `step`: TensorBoard discards what earlier files of the same folder hold
/// at steps >= `step` (logged after the checkpoint a resumed run restarts from).
std::string session_start_event(double wall_time, int64_t step);

/// One hyperparameter: a number, a bool or a string.
struct HParam {
  enum class Kind { Number, Bool, String };
  std::string name;
  Kind kind = Kind::String;
  double number = 0;
  bool flag = false;
  std::string text;
};

/// The hparams plugin's summaries (tags _hparams_/session_start_info, _hparams_/experiment,
/// _hparams_/session_end_info). The experiment declares every hparam with its type and
/// `metric_tags` as the run's metrics (train/* as training, val/* as validation).
std::string hparams_session_start_event(double wall_time, int64_t step,
                                        const std::vector<HParam>& hparams);
std::string hparams_experiment_event(double wall_time, int64_t step,
                                     const std::vector<HParam>& hparams,
                                     const std::vector<std::string>& metric_tags);
std::string hparams_session_end_event(double wall_time, int64_t step, bool success);

}  // namespace unitrain::tensorboard
