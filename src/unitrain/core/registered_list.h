#pragma once
// RegisteredList: what registers itself into one of the library's open lists (Hugging Face
// families, TorchScript exporters, optimizer state serializers), each entry named by a key,
// found by that key or by a question asked of each entry in the order they were registered.
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace unitrain {

/// An append-only list of `Entry`s keyed by their member `key` (a string), safe to add to and
/// read from any thread. It never shrinks and never moves an entry: the pointers find() and
/// find_if() return stay valid for the life of the program.
template <typename Entry>
class RegisteredList {
 public:
  explicit RegisteredList(std::string Entry::*key) : key_(key) {}

  /// Appends `entry`; false (and nothing added) when an entry of the same key is registered.
  bool add(Entry entry) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Entry& e : entries_) {
      if (e.*key_ == entry.*key_) return false;
    }
    entries_.push_back(std::move(entry));
    return true;
  }

  /// The entry whose key is `key`, or nullptr.
  const Entry* find(const std::string& key) const {
    return find_if([&](const Entry& e) { return e.*key_ == key; });
  }

  /// The first entry, in registration order, for which `pred(entry)` is true, or nullptr.
  template <typename Pred>
  const Entry* find_if(const Pred& pred) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Entry& e : entries_) {
      if (pred(e)) return &e;
    }
    return nullptr;
  }

  /// The registered keys, in registration order.
  std::vector<std::string> keys() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const Entry& e : entries_) out.push_back(e.*key_);
    return out;
  }

 private:
  std::string Entry::*key_;
  mutable std::mutex mu_;
  std::deque<Entry> entries_;
};

/// `names` joined as a sentence lists them: "a, b and c" (`conjunction` " and "); "none" when
/// empty.
inline std::string joined_names(const std::vector<std::string>& names,
                                const char* conjunction = " and ") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? conjunction : ", ";
    out += names[i];
  }
  return out.empty() ? "none" : out;
}

}  // namespace unitrain
