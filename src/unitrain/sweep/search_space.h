#pragma once
// SearchSpace: the `space` of a sweep file — config key paths and how each trial picks a value.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace unitrain {

class Config;

/// One key of the search space: its dotted config path and its distribution.
struct SearchParameter {
  enum class Kind { Choice, Uniform, LogUniform, Int, Grid };
  std::string key;  ///< a run config key path, e.g. `optimizer.lr`
  Kind kind = Kind::Choice;
  std::vector<std::string> values;  ///< choice and grid: each value as YAML text
  double lo = 0, hi = 0;            ///< uniform, loguniform, int: the closed range
};

/// A trial's parameters: key path -> YAML text, in the space's order (run config overrides).
/// Drawn floats are written with 6 significant digits (`0.00317429`).
using TrialParameters = std::vector<std::pair<std::string, std::string>>;

/// The search space. Grid keys form a Cartesian product (the last key varies fastest); trial k
/// takes grid point k mod grid_size(), or with GridOrder::Shuffled point P(k mod grid_size()) of
/// a permutation P seeded by the sweep's seed (random and asha: ASHA's asynchronous rule assumes
/// the trials arrive in no particular order). Every other key is drawn from mix_seed(seed, k)
/// alone, so trial k's parameters are a function of (seed, k) only, whatever ran before it.
///
/// Example:
///   auto space = SearchSpace::from_config(Config::from_string("optimizer.lr: {grid: [1, 2]}"));
///   space.trial(0, 1);  // {{"optimizer.lr", "2"}}
class SearchSpace {
 public:
  enum class GridOrder { InOrder, Shuffled };
  /// Reads `space` (a map: key path -> `{choice|uniform|loguniform|int|grid: [...]}`).
  /// ConfigError naming `space.<key>` for an unknown distribution, an empty list, lo > hi, a
  /// non-numeric bound, or loguniform bounds not above 0.
  static SearchSpace from_config(const Config& space, GridOrder order = GridOrder::InOrder);

  const std::vector<SearchParameter>& parameters() const { return parameters_; }
  /// Points of the grid keys' product (1 without grid keys).
  int64_t grid_size() const;
  /// True when every key is a grid key (the grid is the whole space).
  bool grid_only() const;
  bool has(const std::string& key) const;
  /// The axis a chart draws each range key on: `log` (loguniform) or `linear` (uniform, int).
  std::map<std::string, std::string> scales() const;
  /// Trial `k`'s value of every key.
  TrialParameters trial(uint64_t seed, int64_t k) const;

 private:
  std::vector<SearchParameter> parameters_;
  GridOrder order_ = GridOrder::InOrder;
};

}  // namespace unitrain
