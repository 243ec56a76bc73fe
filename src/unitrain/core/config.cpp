#include "unitrain/core/config.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <type_traits>
#include <utility>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

std::string describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return "a list";
  return "a section";
}

bool is_index(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

std::vector<std::string> split_dots(const std::string& key) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(key);
  while (std::getline(in, part, '.')) parts.push_back(part);
  return parts;
}

template <typename T>
T convert(const YAML::Node& node, const std::string& key, const char* expected) {
  UT_CHECK(node.IsDefined() && !node.IsNull(), "missing value for ", key, " (expected ", expected,
           ")");
  UT_CHECK(node.IsScalar(), key, ": expected ", expected, ", got ", describe(node));
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    throw ConfigError(detail::concat(key, ": expected ", expected, ", got ", describe(node)));
  }
}

template <typename T>
std::vector<T> convert_list(const YAML::Node& node, const std::string& key, const char* expected) {
  UT_CHECK(node.IsDefined() && !node.IsNull(), "missing value for ", key, " (expected a list of ",
           expected, ")");
  const char* example = std::is_same_v<T, std::string> ? "[a, b]"
                        : std::is_floating_point_v<T>  ? "[0.5, 1.0]"
                                                       : "[1, 2]";
  UT_CHECK(node.IsSequence(), key, ": expected a list of ", expected, " such as ", example,
           ", got ", describe(node));
  std::vector<T> out;
  for (size_t i = 0; i < node.size(); ++i) {
    out.push_back(convert<T>(node[i], key + "[" + std::to_string(i) + "]", expected));
  }
  return out;
}

// YAML allows a key only once per map, but yaml-cpp keeps the duplicates and a lookup sees only
// one of them: a silent override a user never meant. Refuse it, naming the key and both lines.
void check_unique_keys(const YAML::Node& node, const std::string& path, const std::string& source) {
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      check_unique_keys(node[i], path + "[" + std::to_string(i) + "]", source);
    }
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, int> first_line;
  for (const auto& kv : node) {
    const int line = kv.first.Mark().line + 1;
    if (kv.first.IsScalar()) {
      const std::string& key = kv.first.Scalar();
      const std::string key_path = path.empty() ? key : path + "." + key;
      auto [it, inserted] = first_line.emplace(key, line);
      UT_CHECK(inserted, source, ":", line, ": key '", key_path, "' is set twice (lines ",
               it->second, " and ", line, "); keep one of them");
      check_unique_keys(kv.second, key_path, source);
    }
  }
}

// The keys set in `node` under `path`: scalars and lists of scalars (nulls, empty sections and
// empty lists set nothing); the entries of a list of sections are walked by index
// (`objective.losses.0.type`).
void given_keys(const YAML::Node& node, const std::string& path, std::vector<std::string>& out) {
  auto join = [&path](const std::string& key) { return path.empty() ? key : path + "." + key; };
  if (node.IsMap()) {
    for (const auto& kv : node) given_keys(kv.second, join(kv.first.as<std::string>()), out);
  } else if (node.IsSequence()) {
    bool sections = false;
    for (const auto& item : node) sections = sections || item.IsMap();
    if (!sections && node.size() > 0) return void(out.push_back(path));
    for (size_t i = 0; i < node.size(); ++i) given_keys(node[i], join(std::to_string(i)), out);
  } else if (node.IsScalar()) {
    out.push_back(path);
  }
}

}  // namespace

void KeyReads::read(const std::string& key_path) {
  std::lock_guard<std::mutex> lock(mutex_);
  read_.insert(key_path);
}

std::vector<std::string> KeyReads::unread() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto& key : given_) {
    // Read when the key or a section above it was: `a.b.c`, `a.b`, `a`, or the whole config.
    bool read = read_.count("") > 0;
    for (std::string path = key; !read && !path.empty();) {
      read = read_.count(path) > 0;
      const size_t dot = path.rfind('.');
      path = dot == std::string::npos ? "" : path.substr(0, dot);
    }
    if (!read) out.push_back(key);
  }
  return out;
}

bool KeyReads::first_warning() {
  std::lock_guard<std::mutex> lock(mutex_);
  return !std::exchange(warned_, true);
}

Config::Config() : node_(YAML::NodeType::Map) {}

Config::Config(YAML::Node node, std::string path)
    : node_(std::move(node)), path_(std::move(path)) {}

Config Config::from_string(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    std::vector<YAML::Node> documents = YAML::LoadAll(text);
    // A second document (after a `---` line) would be read by nothing.
    if (documents.size() > 1) {
      const YAML::Mark at = documents[1].Mark();
      throw ConfigError(detail::concat(
          source, ":", at.line >= 0 ? at.line + 1 : 0,
          ": a second YAML document (after a '---' line): a config is one document; merge its "
          "keys into the first, or give each its own file"));
    }
    if (!documents.empty()) root = documents.front();
  } catch (const YAML::ParserException& e) {
    throw ConfigError(detail::concat(source, ":", e.mark.line + 1, ":", e.mark.column + 1,
                                     ": broken YAML: ", e.msg));
  }
  UT_CHECK(root.IsDefined() && !root.IsNull(), source, ": the config is empty");
  UT_CHECK(root.IsMap(), source, ": the config must be a map of keys (like 'model: ...'), got ",
           describe(root));
  check_unique_keys(root, "", source);
  Config config(root, "");
  config.track_reads();  // its keys are the user's: the run warns about those nothing read
  return config;
}

Config Config::from_file(const std::string& path) {
  namespace fs = std::filesystem;
  UT_CHECK(fs::exists(path), "config file '", path, "' does not exist");
  UT_CHECK(!fs::is_directory(path), "config file '", path, "' is a directory");
  std::ifstream in(path, std::ios::binary);
  UT_CHECK(in.good(), "cannot read config file '", path, "'");
  std::stringstream text;
  text << in.rdbuf();
  UT_CHECK(text.str().find_first_not_of(" \t\r\n") != std::string::npos, "config file '", path,
           "' is empty");
  return from_string(text.str(), path);
}

std::string Config::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

YAML::Node Config::child(const std::string& key) const {
  if (!node_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node& self = node_;
  return self[key];
}

bool Config::has(const std::string& key) const {
  YAML::Node c = child(key);
  return c.IsDefined() && !c.IsNull();
}

bool Config::is_null() const { return !node_.IsDefined() || node_.IsNull(); }

Config Config::at(const std::string& key) const {
  YAML::Node c = child(key);
  UT_CHECK(c.IsDefined(), "missing key ", key_path(key));
  Config out(c, key_path(key));
  out.reads_ = reads_;
  return out;
}

std::vector<std::string> Config::keys() const {
  std::vector<std::string> out;
  if (!node_.IsMap()) return out;
  for (const auto& kv : node_) out.push_back(kv.first.as<std::string>());
  return out;
}

std::vector<Config> Config::list(const std::string& key) const {
  std::vector<Config> out;
  YAML::Node c = child(key);
  if (!c.IsDefined() || c.IsNull()) return out;
  UT_CHECK(c.IsSequence(), key_path(key), ": expected a list, got ", describe(c));
  for (size_t i = 0; i < c.size(); ++i) {
    out.emplace_back(c[i], key_path(key) + "." + std::to_string(i));
    out.back().reads_ = reads_;
  }
  return out;
}

bool Config::get_bool(const std::string& key) const {
  note(key);
  return convert<bool>(child(key), key_path(key), "true or false");
}
int64_t Config::get_int(const std::string& key) const {
  note(key);
  return convert<int64_t>(child(key), key_path(key), "an integer");
}
double Config::get_double(const std::string& key) const {
  note(key);
  return convert<double>(child(key), key_path(key), "a number");
}
std::string Config::get_string(const std::string& key) const {
  note(key);
  return convert<std::string>(child(key), key_path(key), "a string");
}
std::vector<int64_t> Config::get_int_list(const std::string& key) const {
  note(key);
  return convert_list<int64_t>(child(key), key_path(key), "integers");
}
std::vector<double> Config::get_double_list(const std::string& key) const {
  note(key);
  return convert_list<double>(child(key), key_path(key), "numbers");
}
std::vector<std::string> Config::get_string_list(const std::string& key) const {
  note(key);
  return convert_list<std::string>(child(key), key_path(key), "strings");
}
TrainUnit Config::get_duration(const std::string& key) const {
  return TrainUnit::parse(get_string(key), key_path(key));
}

void Config::set(const std::string& dotted_key, const std::string& yaml_value) {
  auto parts = split_dots(dotted_key);
  UT_CHECK(!parts.empty(), "empty override key");
  for (const auto& p : parts) {
    UT_CHECK(!p.empty(), "override key '", dotted_key, "' has an empty part");
  }
  YAML::Node value;
  try {
    value = YAML::Load(yaml_value);
  } catch (const YAML::Exception&) {
    value = YAML::Node(yaml_value);  // not YAML: take it as a plain string
  }
  if (!value.IsDefined()) value = YAML::Node(YAML::NodeType::Null);
  YAML::Node cur = node_;
  std::string walked;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const std::string& p = parts[i];
    walked = walked.empty() ? p : walked + "." + p;
    YAML::Node next;
    if (cur.IsSequence()) {
      UT_CHECK(is_index(p), "override ", dotted_key, ": ", walked, " is a list; use an index");
      size_t index = std::stoul(p);
      UT_CHECK(index < cur.size(), "override ", dotted_key, ": index ", index,
               " is past the end of the list (", cur.size(), " entries)");
      next.reset(cur[index]);
    } else {
      if (!cur[p].IsDefined() || cur[p].IsNull() || cur[p].IsScalar()) {
        cur[p] = YAML::Node(YAML::NodeType::Map);
      }
      next.reset(cur[p]);
    }
    cur.reset(next);
  }
  const std::string& last = parts.back();
  if (cur.IsSequence()) {
    UT_CHECK(is_index(last) && std::stoul(last) < cur.size(), "override ", dotted_key,
             ": not a valid index into a list of ", cur.size());
    cur[std::stoul(last)] = value;
  } else {
    cur[last] = value;
  }
  // Set on a whole config, the key is the user's, as a key of the text is: a run warns when
  // nothing reads it. A new record for this config (those it shares one with keep theirs): what
  // was unread, and the keys just set. (A section's set is the program's own doing, e.g. the
  // classes given to a split: it keeps the record it shares with the whole config.)
  if (reads_ && path_.empty()) {
    const std::string set = key_path(dotted_key);
    std::vector<std::string> given;
    for (std::string& key : reads_->unread()) {  // the keys it replaced go
      if (key != set && key.rfind(set + ".", 0) != 0) given.push_back(std::move(key));
    }
    given_keys(value, set, given);
    reads_ = std::make_shared<KeyReads>(std::move(given));
  }
}

void Config::merge(const Config& other) {
  if (!other.node_.IsMap()) return;
  for (const auto& kv : other.node_) {
    const std::string key = kv.first.as<std::string>();
    if (kv.second.IsMap() && node_[key].IsMap()) {
      Config mine(node_[key], key_path(key));
      mine.merge(Config(kv.second, other.key_path(key)));
    } else {
      node_[key] = YAML::Clone(kv.second);
    }
  }
}

void Config::note(const std::string& key) const {
  if (reads_) reads_->read(key_path(key));
}

void Config::track_reads() {
  if (reads_) return;
  std::vector<std::string> given;
  given_keys(node_, path_, given);
  reads_ = std::make_shared<KeyReads>(std::move(given));
}

void Config::mark_read(const std::string& key) const {
  if (reads_) reads_->read(key.empty() ? path_ : key_path(key));
}

std::vector<std::string> Config::unread_keys() const {
  return reads_ ? reads_->unread() : std::vector<std::string>{};
}

Config Config::clone() const {
  Config out(YAML::Clone(node_), path_);
  out.reads_ = reads_;
  return out;
}

std::string Config::dump() const {
  YAML::Emitter out;
  out << node_;
  return std::string(out.c_str()) + "\n";
}

}  // namespace unitrain
