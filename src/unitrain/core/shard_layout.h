#pragma once
// ShardLayout: how ZeRO stage 3 lays a model's parameters out in flat buffers and cuts them
// into one equal part per rank (parallel/sharded_parameters.h makes it; checkpoints store it as
// model-shards.json and merge the parts with it).
#include <cstdint>
#include <string>
#include <vector>

namespace unitrain {

struct ShardLayout {
  struct Member {
    std::string name;  ///< the parameter's state_dict name
    std::vector<int64_t> shape;
    int64_t offset = 0;  ///< its first element in the flat
  };
  struct Flat {
    int unit = 0;
    int key = 0;         ///< the optimizer group (-1: not trained)
    std::string dtype;   ///< as c10::toString names it: Float, BFloat16, ...
    int64_t length = 0;  ///< elements of the members
    int64_t part = 0;    ///< elements of each rank's part (padded length / world size)
    std::vector<Member> members;
  };
  int world_size = 1;
  std::vector<Flat> flats;

  std::string to_json() const;
  /// TrainError naming `what` when `text` is not such a layout.
  static ShardLayout from_json(const std::string& text, const std::string& what);
  /// The same flats (members, dtypes, keys), whatever the world size.
  bool same_flats(const ShardLayout& other) const;
};

}  // namespace unitrain
