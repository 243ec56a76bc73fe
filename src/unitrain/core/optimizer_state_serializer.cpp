#include "unitrain/core/optimizer_state_serializer.h"

#include <mutex>
#include <vector>

namespace unitrain::optimizer_state_serializers {
namespace {

struct SerializerList {
  std::mutex mu;
  // Never shrinks; unique_ptrs keep the pointers find() returns valid as it grows.
  std::vector<std::unique_ptr<OptimizerStateSerializer>> entries;
};

SerializerList& serializer_list() {
  static SerializerList list;
  return list;
}

}  // namespace

void add(OptimizerStateSerializer s) {
  SerializerList& list = serializer_list();
  std::lock_guard<std::mutex> lock(list.mu);
  for (const auto& e : list.entries) {
    UT_CHECK_TRAIN(e->type != s.type, "optimizer state serializer '", s.type,
                   "' is registered twice");
  }
  list.entries.push_back(std::make_unique<OptimizerStateSerializer>(std::move(s)));
}

const OptimizerStateSerializer* find(const torch::optim::Optimizer& optimizer) {
  SerializerList& list = serializer_list();
  std::lock_guard<std::mutex> lock(list.mu);
  for (const auto& e : list.entries) {
    if (e->handles(optimizer)) return e.get();
  }
  return nullptr;
}

const OptimizerStateSerializer* find(const std::string& type) {
  SerializerList& list = serializer_list();
  std::lock_guard<std::mutex> lock(list.mu);
  for (const auto& e : list.entries) {
    if (e->type == type) return e.get();
  }
  return nullptr;
}

}  // namespace unitrain::optimizer_state_serializers
