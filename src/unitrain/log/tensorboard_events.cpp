#include "unitrain/log/tensorboard_events.h"

#include "unitrain/log/proto/tb_event.pb.h"
#include "unitrain/log/proto/tb_hparams.pb.h"

namespace unitrain::tensorboard {
namespace {

namespace hp = unitrain::tensorboard::hparams;

Event make_event(double wall_time, int64_t step) {
  Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  return e;
}

std::string serialize(const Event& e) {
  std::string out;
  e.SerializeToString(&out);
  return out;
}

/// A summary of the hparams plugin: `data` in the metadata, an empty float tensor as the value
/// (what TensorBoard's own hparams writer stores).
std::string hparams_event(double wall_time, int64_t step, const std::string& tag,
                          const hp::HParamsPluginData& data) {
  Event e = make_event(wall_time, step);
  Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  SummaryMetadata::PluginData* plugin = v->mutable_metadata()->mutable_plugin_data();
  plugin->set_plugin_name("hparams");
  data.SerializeToString(plugin->mutable_content());
  TensorProto* t = v->mutable_tensor();
  t->set_dtype(DT_FLOAT);
  t->mutable_tensor_shape()->add_dim()->set_size(0);
  return serialize(e);
}

hp::DataType hparam_type(HParam::Kind k) {
  switch (k) {
    case HParam::Kind::Number:
      return hp::DATA_TYPE_FLOAT64;
    case HParam::Kind::Bool:
      return hp::DATA_TYPE_BOOL;
    case HParam::Kind::String:
      return hp::DATA_TYPE_STRING;
  }
  return hp::DATA_TYPE_UNSET;
}

}  // namespace

std::string file_version_event(double wall_time) {
  Event e = make_event(wall_time, 0);
  e.set_file_version("brain.Event:2");
  return serialize(e);
}

std::string scalars_event(double wall_time, int64_t step,
                          const std::map<std::string, double>& values) {
  Event e = make_event(wall_time, step);
  Summary* s = e.mutable_summary();
  for (const auto& [tag, value] : values) {
    Summary::Value* v = s->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  return serialize(e);
}

std::string text_event(double wall_time, int64_t step, const std::string& tag,
                       const std::string& markdown) {
  Event e = make_event(wall_time, step);
  Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  // TextPluginData{version: 0} serializes to no bytes.
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  v->mutable_metadata()->set_data_class(DATA_CLASS_TENSOR);
  TensorProto* t = v->mutable_tensor();
  t->set_dtype(DT_STRING);
  t->mutable_tensor_shape();  // rank 0
  t->add_string_val(markdown);
  return serialize(e);
}

std::string session_start_event(double wall_time, int64_t step) {
  Event e = make_event(wall_time, step);
  e.mutable_session_log()->set_status(SessionLog::START);
  return serialize(e);
}

std::string hparams_session_start_event(double wall_time, int64_t step,
                                        const std::vector<HParam>& hparams) {
  hp::HParamsPluginData data;
  hp::SessionStartInfo* info = data.mutable_session_start_info();
  info->set_start_time_secs(wall_time);
  auto& map = *info->mutable_hparams();
  for (const HParam& h : hparams) {
    google::protobuf::Value& value = map[h.name];
    switch (h.kind) {
      case HParam::Kind::Number:
        value.set_number_value(h.number);
        break;
      case HParam::Kind::Bool:
        value.set_bool_value(h.flag);
        break;
      case HParam::Kind::String:
        value.set_string_value(h.text);
        break;
    }
  }
  return hparams_event(wall_time, step, "_hparams_/session_start_info", data);
}

std::string hparams_experiment_event(double wall_time, int64_t step,
                                     const std::vector<HParam>& hparams,
                                     const std::vector<std::string>& metric_tags) {
  hp::HParamsPluginData data;
  hp::Experiment* experiment = data.mutable_experiment();
  experiment->set_time_created_secs(wall_time);
  for (const HParam& h : hparams) {
    hp::HParamInfo* info = experiment->add_hparam_infos();
    info->set_name(h.name);
    info->set_type(hparam_type(h.kind));
  }
  for (const std::string& tag : metric_tags) {
    hp::MetricInfo* info = experiment->add_metric_infos();
    info->mutable_name()->set_tag(tag);  // group "": the scalars are in the session's folder
    info->set_dataset_type(tag.rfind("train/", 0) == 0 ? hp::DATASET_TRAINING
                           : tag.rfind("val/", 0) == 0 ? hp::DATASET_VALIDATION
                                                       : hp::DATASET_UNKNOWN);
  }
  return hparams_event(wall_time, step, "_hparams_/experiment", data);
}

std::string hparams_session_end_event(double wall_time, int64_t step, bool success) {
  hp::HParamsPluginData data;
  hp::SessionEndInfo* info = data.mutable_session_end_info();
  info->set_status(success ? hp::STATUS_SUCCESS : hp::STATUS_FAILURE);
  info->set_end_time_secs(wall_time);
  return hparams_event(wall_time, step, "_hparams_/session_end_info", data);
}

}  // namespace unitrain::tensorboard
