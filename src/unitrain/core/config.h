#pragma once
// Config: a YAML node that knows its key path, so every error names the key.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "unitrain/core/train_unit.h"

namespace unitrain {

/// Which keys of one run's config the program read: the keys the user gave (the leaves of the
/// config before defaults were filled in) against the key paths read through Config's typed
/// getters or claimed whole with Config::mark_read(). Shared by every Config taken from the
/// same run config (sections, copies, resolved copies), so that a key read anywhere counts.
class KeyReads {
 public:
  explicit KeyReads(std::vector<std::string> given) : given_(std::move(given)) {}
  /// Records `key_path`: that key, or every key under it (a list, a section read whole).
  void read(const std::string& key_path);
  /// The given keys neither read themselves nor under a key read whole, in file order.
  std::vector<std::string> unread() const;
  /// True the first time only: a warning about unread keys is given once.
  bool first_warning();

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> given_;
  std::set<std::string> read_;
  bool warned_ = false;
};

/// A view of one section of the configuration together with its dotted key path
/// (`optimizer.args`). Typed getters throw ConfigError naming the full key and the bad value.
/// Configs returned by Schema::resolve have every default filled in, so components read them
/// without defaults of their own.
class Config {
 public:
  Config();  // an empty section at the root
  Config(YAML::Node node, std::string path);

  /// Parses YAML text; `source` names the file in errors (with the line of a syntax error).
  static Config from_string(const std::string& text, const std::string& source = "<string>");
  /// Reads a YAML file; a missing, empty or broken file is a ConfigError naming it.
  static Config from_file(const std::string& path);

  const std::string& path() const { return path_; }
  /// `path().key`, or `key` at the root.
  std::string key_path(const std::string& key) const;

  bool has(const std::string& key) const;  ///< present and not null
  bool is_null() const;
  Config at(const std::string& key) const;  ///< child section; ConfigError when missing
  std::vector<std::string> keys() const;    ///< keys of a map section, in file order
  std::vector<Config> list(const std::string& key) const;  ///< a list of sections

  bool get_bool(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_double(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::vector<int64_t> get_int_list(const std::string& key) const;
  std::vector<double> get_double_list(const std::string& key) const;
  std::vector<std::string> get_string_list(const std::string& key) const;
  TrainUnit get_duration(const std::string& key) const;

  /// Sets a dotted key (`optimizer.lr`, `objective.losses.0.weight`) from YAML text
  /// (`3e-4`, `[64, 10]`, `{a: 1}`); creates missing sections. Used by command-line overrides.
  void set(const std::string& dotted_key, const std::string& yaml_value);
  /// Merges `other` into this config: maps merge recursively, everything else is replaced.
  void merge(const Config& other);

  /// Starts recording which keys are read (see KeyReads): the keys set in this config now are
  /// the ones given. Sections, copies and Schema::resolve()'s result share the record. No-op
  /// when this config records already.
  void track_reads();
  /// Shares `other`'s record of reads (a config derived from it, such as its resolved copy).
  void share_reads(const Config& other) { reads_ = other.reads_; }
  /// Records `key` (a key of this section; "" = the section itself) as read, with everything
  /// under it: for sections consumed whole (free-form maps, a component handed its args).
  void mark_read(const std::string& key = "") const;
  /// The given keys nothing read so far (empty when this config records no reads).
  std::vector<std::string> unread_keys() const;
  /// The shared record, or null when this config records no reads.
  const std::shared_ptr<KeyReads>& key_reads() const { return reads_; }

  Config clone() const;
  std::string dump() const;  ///< block-style YAML
  const YAML::Node& node() const { return node_; }
  YAML::Node& node() { return node_; }

 private:
  YAML::Node child(const std::string& key) const;
  void note(const std::string& key) const;  // records key_path(key) as read
  YAML::Node node_;
  std::string path_;
  std::shared_ptr<KeyReads> reads_;
};

}  // namespace unitrain
