#include "unitrain/sweep/search_space.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>

#include "unitrain/core/config.h"
#include "unitrain/core/error.h"
#include "unitrain/data/permutation.h"

namespace unitrain {
namespace {

using Kind = SearchParameter::Kind;

const std::vector<std::pair<std::string, Kind>>& distribution_names() {
  static const std::vector<std::pair<std::string, Kind>> names = {{"choice", Kind::Choice},
                                                                  {"uniform", Kind::Uniform},
                                                                  {"loguniform", Kind::LogUniform},
                                                                  {"int", Kind::Int},
                                                                  {"grid", Kind::Grid}};
  return names;
}

std::string yaml_of(const YAML::Node& node) {
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

double bound(const YAML::Node& node, const std::string& key) {
  try {
    return node.as<double>();
  } catch (const YAML::Exception&) {
    throw ConfigError(detail::concat(key, ": expected a number, got '", yaml_of(node), "'"));
  }
}

SearchParameter read_parameter(const std::string& key, const YAML::Node& spec) {
  const std::string where = "space." + key;
  std::string known;
  for (const auto& [name, kind] : distribution_names()) known += (known.empty() ? "" : ", ") + name;
  UT_CHECK(spec.IsMap() && spec.size() == 1, where,
           ": expected one distribution, e.g. {loguniform: [1.0e-4, 1.0e-2]}; known: ", known);
  const std::string name = spec.begin()->first.as<std::string>();
  const YAML::Node list = spec.begin()->second;
  SearchParameter p;
  p.key = key;
  bool found = false;
  for (const auto& [n, kind] : distribution_names()) {
    if (n == name) p.kind = kind, found = true;
  }
  UT_CHECK(found, where, ": unknown distribution '", name, "'; known: ", known);
  const std::string list_key = where + "." + name;
  UT_CHECK(list.IsSequence(), list_key, ": expected a list, got '", yaml_of(list), "'");
  if (p.kind == Kind::Choice || p.kind == Kind::Grid) {
    UT_CHECK(list.size() > 0, list_key, ": the list is empty: give at least one value");
    for (const auto& v : list) p.values.push_back(yaml_of(v));
    return p;
  }
  UT_CHECK(list.size() == 2, list_key, ": expected [lo, hi], got '", yaml_of(list), "'");
  p.lo = bound(list[0], list_key);
  p.hi = bound(list[1], list_key);
  UT_CHECK(p.lo <= p.hi, list_key, ": empty range: lo ", yaml_of(list[0]), " > hi ",
           yaml_of(list[1]));
  if (p.kind == Kind::LogUniform) {
    UT_CHECK(p.lo > 0, list_key, ": loguniform needs lo > 0, got ", yaml_of(list[0]));
  }
  if (p.kind == Kind::Int) {
    UT_CHECK(p.lo == std::floor(p.lo) && p.hi == std::floor(p.hi), list_key,
             ": int needs whole bounds, got '", yaml_of(list), "'");
  }
  return p;
}

/// The stream of mix_seed(seed, ...) that orders a shuffled grid (the draws use mix_seed(seed,
/// k) for trial k: this stream is far from any trial index).
constexpr uint64_t kGridOrderStream = 0x677269646f726465ULL;  // "gridorde"

/// A double in [0, 1) from the 53 high bits of a 64-bit draw.
double unit_interval(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

std::string draw(const SearchParameter& p, uint64_t bits) {
  const double u = unit_interval(bits);
  switch (p.kind) {
    case Kind::Choice:
      return p.values[bits % p.values.size()];
    case Kind::Uniform:
      return fmt::format("{:.6g}", p.lo + u * (p.hi - p.lo));
    case Kind::LogUniform:
      return fmt::format("{:.6g}",
                         std::exp(std::log(p.lo) + u * (std::log(p.hi) - std::log(p.lo))));
    case Kind::Int: {
      const auto span = static_cast<uint64_t>(p.hi - p.lo) + 1;
      return fmt::format("{}", static_cast<int64_t>(p.lo) + static_cast<int64_t>(bits % span));
    }
    case Kind::Grid:
      break;
  }
  return "";  // grid keys are not drawn
}

}  // namespace

SearchSpace SearchSpace::from_config(const Config& space, GridOrder order) {
  UT_CHECK(space.node().IsMap() && space.node().size() > 0, "space",
           ": expected a map of config keys to distributions, e.g. space: {optimizer.lr: "
           "{loguniform: [1.0e-4, 1.0e-2]}}");
  SearchSpace s;
  s.order_ = order;
  for (const auto& entry : space.node()) {
    s.parameters_.push_back(read_parameter(entry.first.as<std::string>(), entry.second));
  }
  return s;
}

int64_t SearchSpace::grid_size() const {
  int64_t n = 1;
  for (const auto& p : parameters_) {
    if (p.kind == Kind::Grid) n *= static_cast<int64_t>(p.values.size());
  }
  return n;
}

bool SearchSpace::grid_only() const {
  for (const auto& p : parameters_) {
    if (p.kind != Kind::Grid) return false;
  }
  return true;
}

std::map<std::string, std::string> SearchSpace::scales() const {
  std::map<std::string, std::string> out;
  for (const SearchParameter& p : parameters_) {
    if (p.kind == SearchParameter::Kind::LogUniform) out[p.key] = "log";
    if (p.kind == SearchParameter::Kind::Uniform || p.kind == SearchParameter::Kind::Int) {
      out[p.key] = "linear";
    }
  }
  return out;
}

bool SearchSpace::has(const std::string& key) const {
  for (const auto& p : parameters_) {
    if (p.key == key) return true;
  }
  return false;
}

TrialParameters SearchSpace::trial(uint64_t seed, int64_t k) const {
  TrialParameters out(parameters_.size());
  // The grid point: k's digits in the mixed radix of the grid keys, the last key fastest.
  int64_t point = k % grid_size();
  if (order_ == GridOrder::Shuffled) {
    point = FeistelPermutation(grid_size(), mix_seed(seed, kGridOrderStream))(point);
  }
  for (size_t i = parameters_.size(); i-- > 0;) {
    const SearchParameter& p = parameters_[i];
    out[i].first = p.key;
    if (p.kind != Kind::Grid) continue;
    const auto n = static_cast<int64_t>(p.values.size());
    out[i].second = p.values[point % n];
    point /= n;
  }
  const uint64_t trial_seed = mix_seed(seed, static_cast<uint64_t>(k));
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (parameters_[i].kind == Kind::Grid) continue;
    out[i].second = draw(parameters_[i], mix_seed(trial_seed, i));
  }
  return out;
}

}  // namespace unitrain
