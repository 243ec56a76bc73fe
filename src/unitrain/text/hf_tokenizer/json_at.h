#pragma once
// A value of a tokenizer.json with the path that leads to it, so that every error names the file,
// the JSON path and the bad value. Internal: included by the hf_tokenizer/*.cpp only (it brings
// nlohmann/json).
#include <cstdint>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/error.h"

namespace unitrain::hf {

/// A short view of `value` for a message: at most about 80 characters, without walking (or
/// recursing into) more of a large or deeply nested value than it shows.
inline std::string json_preview(const nlohmann::json& value) {
  constexpr size_t kLimit = 80;
  std::string out;
  // An explicit stack of (container, next item) instead of recursion.
  std::vector<std::pair<const nlohmann::json*, size_t>> open;
  const auto scalar = [&](const nlohmann::json& v) {
    if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      out += nlohmann::json(s.substr(0, kLimit))
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } else {
      out += v.dump();
    }
  };
  const auto enter = [&](const nlohmann::json& v) {
    if (v.is_structured()) {
      out += v.is_array() ? '[' : '{';
      open.emplace_back(&v, 0);
    } else {
      scalar(v);
    }
  };
  enter(value);
  while (!open.empty() && out.size() < kLimit) {
    auto& [container, next] = open.back();
    if (next == container->size()) {
      out += container->is_array() ? ']' : '}';
      open.pop_back();
      continue;
    }
    if (next > 0) out += ',';
    auto item = container->begin();
    std::advance(item, next++);
    if (container->is_object()) {
      out += nlohmann::json(item.key().substr(0, kLimit))
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
             ':';
    }
    enter(*item);
  }
  if (out.size() > kLimit || !open.empty()) {
    size_t end = std::min(out.size(), kLimit);
    while (end > 0 && (static_cast<unsigned char>(out[end]) & 0xC0) == 0x80) --end;
    out = out.substr(0, end) + "...";
  }
  return out;
}

/// One JSON value of `file` at `path` ("model.merges[3]"). Getters throw ConfigError naming the
/// file, the path and what was expected. A value nested more than kMaxDepth levels below the
/// root is refused before anything reads it, so that the readers that recurse (a Sequence of
/// Sequences) stay shallow whatever the file holds.
class JsonAt {
 public:
  static constexpr int kMaxDepth = 64;

  JsonAt(const nlohmann::json& value, std::string path, const std::string& file, int depth = 0)
      : value_(value), path_(std::move(path)), file_(file), depth_(depth) {
    if (depth_ > kMaxDepth) {
      fail("is nested " + std::to_string(depth_) + " levels deep; unitrain reads at most " +
           std::to_string(kMaxDepth));
    }
  }

  const nlohmann::json& value() const { return value_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }
  bool is_null() const { return value_.is_null(); }

  /// A key of this object; ConfigError when it is missing (or this is not an object).
  JsonAt at(const std::string& key) const {
    expect(value_.is_object(), "an object");
    auto it = value_.find(key);
    if (it == value_.end()) fail("has no key '" + key + "'");
    return {*it, child(key), file_, depth_ + 1};
  }
  /// A key of this object, or nullopt when it is missing or null.
  std::optional<JsonAt> find(const std::string& key) const {
    expect(value_.is_object(), "an object");
    auto it = value_.find(key);
    if (it == value_.end() || it->is_null()) return std::nullopt;
    return JsonAt(*it, child(key), file_, depth_ + 1);
  }
  bool has(const std::string& key) const { return find(key).has_value(); }
  /// The items of this array.
  std::vector<JsonAt> items() const {
    expect(value_.is_array(), "an array");
    std::vector<JsonAt> out;
    out.reserve(value_.size());
    for (size_t i = 0; i < value_.size(); ++i) {
      out.emplace_back(value_[i], path_ + "[" + std::to_string(i) + "]", file_, depth_ + 1);
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
  /// A token id of a tokenizer with `vocab_size` ids (model.vocab's and added_tokens').
  int token_id(int64_t vocab_size) const {
    return id_below(vocab_size,
                    "the tokens of model.vocab and added_tokens: " + std::to_string(vocab_size));
  }
  /// A token id below `end`; `end_is` says what `end` is, for the message.
  int id_below(int64_t end, const std::string& end_is) const {
    const bool whole = value_.is_number_integer() &&
                       !(value_.is_number_unsigned() && value_.get<uint64_t>() > INT64_MAX);
    const int64_t id = whole ? value_.get<int64_t>() : -1;
    if (!whole || id < 0 || id >= end) {
      fail("is " + json_preview(value_) + "; a token id is an integer from 0 below " +
           std::to_string(end) + " (" + end_is + ")");
    }
    return static_cast<int>(id);
  }
  /// A value below this one that no getter reaches (an object's items), at `key`.
  JsonAt member(const nlohmann::json& value, const std::string& key) const {
    return {value, child(key), file_, depth_ + 1};
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
    // A path of a deeply nested value: its start and its end.
    const std::string path = path_.size() <= 160
                                 ? path_
                                 : path_.substr(0, 100) + "..." + path_.substr(path_.size() - 50);
    throw ConfigError("tokenizer '" + file_ + "': " + (path.empty() ? "the file" : path) + " " +
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
    if (!ok) fail(std::string("should be ") + what + ", not " + json_preview(value_));
  }

  const nlohmann::json& value_;
  std::string path_;
  const std::string& file_;
  int depth_;
};

}  // namespace unitrain::hf
