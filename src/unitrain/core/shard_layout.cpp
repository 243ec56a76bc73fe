#include "unitrain/core/shard_layout.h"

#include <nlohmann/json.hpp>

#include "unitrain/core/error.h"

namespace unitrain {

std::string ShardLayout::to_json() const {
  nlohmann::json j;
  j["format"] = 1;
  j["world_size"] = world_size;
  j["flats"] = nlohmann::json::array();
  for (const Flat& f : flats) {
    nlohmann::json members = nlohmann::json::array();
    for (const Member& m : f.members) members.push_back({m.name, m.shape, m.offset});
    j["flats"].push_back({{"unit", f.unit},
                          {"key", f.key},
                          {"dtype", f.dtype},
                          {"length", f.length},
                          {"part", f.part},
                          {"members", members}});
  }
  return j.dump(1) + "\n";
}

ShardLayout ShardLayout::from_json(const std::string& text, const std::string& what) {
  ShardLayout out;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    UT_CHECK_TRAIN(j.at("format").get<int>() == 1, what, ": layout format ", j.at("format").dump(),
                   " is not one this unitrain reads (1)");
    out.world_size = j.at("world_size").get<int>();
    for (const auto& f : j.at("flats")) {
      Flat flat;
      flat.unit = f.at("unit").get<int>();
      flat.key = f.at("key").get<int>();
      flat.dtype = f.at("dtype").get<std::string>();
      flat.length = f.at("length").get<int64_t>();
      flat.part = f.at("part").get<int64_t>();
      for (const auto& m : f.at("members")) {
        flat.members.push_back({m.at(0).get<std::string>(), m.at(1).get<std::vector<int64_t>>(),
                                m.at(2).get<int64_t>()});
      }
      UT_CHECK_TRAIN(flat.part * out.world_size >= flat.length, what, ": a flat of ", flat.length,
                     " elements in parts of ", flat.part, " for ", out.world_size, " ranks");
      out.flats.push_back(std::move(flat));
    }
  } catch (const nlohmann::json::exception& e) {
    throw TrainError(what + " is not a shard layout: " + e.what());
  }
  return out;
}

bool ShardLayout::same_flats(const ShardLayout& other) const {
  if (flats.size() != other.flats.size()) return false;
  for (size_t i = 0; i < flats.size(); ++i) {
    const Flat &a = flats[i], &b = other.flats[i];
    if (a.unit != b.unit || a.key != b.key || a.dtype != b.dtype || a.length != b.length ||
        a.members.size() != b.members.size()) {
      return false;
    }
    for (size_t k = 0; k < a.members.size(); ++k) {
      if (a.members[k].name != b.members[k].name || a.members[k].shape != b.members[k].shape ||
          a.members[k].offset != b.members[k].offset) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace unitrain
