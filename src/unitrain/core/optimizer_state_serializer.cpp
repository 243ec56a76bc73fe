#include "unitrain/core/optimizer_state_serializer.h"

#include "unitrain/core/registered_list.h"

namespace unitrain::optimizer_state_serializers {
namespace {

RegisteredList<OptimizerStateSerializer>& serializer_list() {
  static RegisteredList<OptimizerStateSerializer> list(&OptimizerStateSerializer::type);
  return list;
}

}  // namespace

void add(OptimizerStateSerializer s) {
  const std::string type = s.type;
  UT_CHECK_TRAIN(serializer_list().add(std::move(s)), "optimizer state serializer '", type,
                 "' is registered twice");
}

const OptimizerStateSerializer* find(const torch::optim::Optimizer& optimizer) {
  return serializer_list().find_if(
      [&](const OptimizerStateSerializer& s) { return s.handles(optimizer); });
}

const OptimizerStateSerializer* find(const std::string& type) {
  return serializer_list().find(type);
}

}  // namespace unitrain::optimizer_state_serializers
