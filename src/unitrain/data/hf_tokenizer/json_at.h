#pragma once
// A value of a tokenizer.json with the path that leads to it, so that every error names the file,
// the JSON path and the bad value. Internal: included by the hf_tokenizer/*.cpp only (it brings
// nlohmann/json).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/error.h"

namespace unitrain::hf {

/// One JSON value of `file` at `path` ("model.merges[3]"). Getters throw ConfigError naming the
/// file, the path and what was expected.
class JsonAt {
 public:
  JsonAt(const nlohmann::json& value, std::string path, const std::string& file)
      : value_(value), path_(std::move(path)), file_(file) {}

  const nlohmann::json& value() const { return value_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }
  bool is_null() const { return value_.is_null(); }

  /// A key of this object; ConfigError when it is missing (or this is not an object).
  JsonAt at(const std::string& key) const {
    expect(value_.is_object(), "an object");
    auto it = value_.find(key);
    if (it == value_.end()) fail("has no key '" + key + "'");
    return {*it, child(key), file_};
  }
  /// A key of this object, or nullopt when it is missing or null.
  std::optional<JsonAt> find(const std::string& key) const {
    expect(value_.is_object(), "an object");
    auto it = value_.find(key);
    if (it == value_.end() || it->is_null()) return std::nullopt;
    return JsonAt(*it, child(key), file_);
  }
  bool has(const std::string& key) const { return find(key).has_value(); }
  /// The items of this array.
  std::vector<JsonAt> items() const {
    expect(value_.is_array(), "an array");
    std::vector<JsonAt> out;
    out.reserve(value_.size());
    for (size_t i = 0; i < value_.size(); ++i) {
      out.emplace_back(value_[i], path_ + "[" + std::to_string(i) + "]", file_);
    }
    return out;
  }
  const std::string& str() const {
    expect(value_.is_string(), "a string");
    return value_.get_ref<const std::string&>();
  }
  bool boolean() const {
    expect(value_.is_boolean(), "true or false");
    return value_.get<bool>();
  }
  int64_t integer() const {
    expect(value_.is_number_integer(), "an integer");
    return value_.get<int64_t>();
  }
  /// The key's string, or `fallback` when it is missing or null.
  std::string str_or(const std::string& key, const std::string& fallback) const {
    auto v = find(key);
    return v ? v->str() : fallback;
  }
  bool bool_or(const std::string& key, bool fallback) const {
    auto v = find(key);
    return v ? v->boolean() : fallback;
  }
  int64_t int_or(const std::string& key, int64_t fallback) const {
    auto v = find(key);
    return v ? v->integer() : fallback;
  }
  /// The component's "type".
  const std::string& type() const { return at("type").str(); }

  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError("tokenizer '" + file_ + "': " + (path_.empty() ? "the file" : path_) + " " +
                      what);
  }
  /// ConfigError for a component type this reader does not implement.
  [[noreturn]] void unsupported(const std::string& kind, const std::string& known) const {
    fail("has " + kind + " type '" + type() + "', which unitrain does not implement (it reads " +
         known + ")");
  }

 private:
  std::string child(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  void expect(bool ok, const char* what) const {
    if (!ok) fail(std::string("should be ") + what + ", not " + value_.dump().substr(0, 80));
  }

  const nlohmann::json& value_;
  std::string path_;
  const std::string& file_;
};

}  // namespace unitrain::hf
