#include "unitrain/data/chat_template.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

bool is_jinja(const std::string& text) {
  return text.find("{%") != std::string::npos || text.find("{{") != std::string::npos ||
         text.find("{#") != std::string::npos;
}

}  // namespace

TextTemplate::TextTemplate(const std::string& text, const std::vector<std::string>& fields,
                           const std::string& required, const std::string& what) {
  UT_CHECK(!is_jinja(text), what, ": '", text,
           "' is a Jinja template, which unitrain cannot run; give plain text with the fields ",
           "{", fields.front(), "}", fields.size() > 1 ? " and {" + fields.back() + "}" : "");
  int count = 0;
  std::vector<Piece>* out = &before_;
  for (size_t i = 0; i < text.size();) {
    const size_t open = text.find('{', i);
    if (open > i) out->push_back({text.substr(i, open == std::string::npos ? open : open - i)});
    if (open == std::string::npos) break;
    const size_t close = text.find('}', open);
    const std::string name =
        close == std::string::npos ? "" : text.substr(open + 1, close - open - 1);
    UT_CHECK(std::find(fields.begin(), fields.end(), name) != fields.end(), what, ": '", text,
             "' has '{", close == std::string::npos ? text.substr(open + 1) : name,
             close == std::string::npos ? "" : "}", "' at byte ", open, "; its fields are {",
             fields.front(), "}", fields.size() > 1 ? " and {" + fields.back() + "}" : "");
    if (name == required) {
      ++count;
      out = &after_;
    } else {
      out->push_back({name, true});
    }
    i = close + 1;
  }
  UT_CHECK(count == 1, what, ": '", text, "' must hold {", required, "} once, not ", count,
           " times");
}

std::string TextTemplate::fill(const std::vector<Piece>& pieces,
                               const std::map<std::string, std::string>& values) const {
  std::string s;
  for (const Piece& p : pieces) {
    if (!p.field) {
      s += p.text;
    } else if (auto it = values.find(p.text); it != values.end()) {
      s += it->second;
    }
  }
  return s;
}

std::pair<std::string, std::string> TextTemplate::around(
    const std::map<std::string, std::string>& values) const {
  return {fill(before_, values), fill(after_, values)};
}

std::string tokenizer_chat_template(const std::string& tokenizer) {
  const auto path = std::filesystem::path(tokenizer).parent_path() / "tokenizer_config.json";
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return "";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json config = nlohmann::json::parse(text.str(), nullptr, false);
  if (!config.is_object() || !config.contains("chat_template")) return "";
  const nlohmann::json& t = config["chat_template"];
  UT_CHECK(t.is_string(), path.string(), ": chat_template is ",
           t.is_array() ? "a list of named templates" : "not a string",
           ", which unitrain cannot run; give data.<split>.args.chat_template as plain text "
           "with {role} and {content}");
  const std::string s = t.get<std::string>();
  UT_CHECK(!is_jinja(s), path.string(),
           ": its chat_template is a Jinja template, which unitrain cannot run; give "
           "data.<split>.args.chat_template as plain text with {role} and {content} (e.g. "
           "'<|im_start|>{role}\\n{content}<|im_end|>\\n')");
  return s;
}

}  // namespace unitrain
