#include "unitrain/text/chat_template.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "unitrain/core/error.h"
#include "unitrain/core/file_bytes.h"

namespace unitrain {
namespace {

std::string fmt_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

/// tokenizer_config.json as JSON; ConfigError naming it when it is not a JSON object (a
/// truncated file is refused, not ignored).
nlohmann::json read_tokenizer_config(const std::string& path) {
  nlohmann::json config =
      nlohmann::json::parse(read_file_bytes(path, "tokenizer_config.json"), nullptr, false);
  UT_CHECK(!config.is_discarded(), path, ": is not valid JSON (truncated?)");
  UT_CHECK(config.is_object(), path, ": is not a JSON object");
  return config;
}

}  // namespace

bool is_jinja(const std::string& text) {
  return text.find("{%") != std::string::npos || text.find("{{") != std::string::npos ||
         text.find("{#") != std::string::npos;
}

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

TokenizerChatTemplate tokenizer_chat_template(const std::string& tokenizer) {
  const auto path = std::filesystem::path(tokenizer).parent_path() / "tokenizer_config.json";
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return {};
  const nlohmann::json config = read_tokenizer_config(path.string());
  TokenizerChatTemplate out;
  out.path = path.string();
  for (const char* name : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                           "cls_token", "mask_token"}) {
    if (!config.contains(name)) continue;
    const nlohmann::json& token = config[name];  // a string, or an AddedToken {content, ...}
    if (token.is_string()) out.special_tokens.emplace_back(name, token.get<std::string>());
    if (token.is_object() && token.contains("content") && token["content"].is_string()) {
      out.special_tokens.emplace_back(name, token["content"].get<std::string>());
    }
  }
  if (!config.contains("chat_template") || config["chat_template"].is_null()) return out;
  const nlohmann::json& t = config["chat_template"];
  UT_CHECK(t.is_string() || t.is_array(), out.path,
           ": chat_template is neither a string nor a list of named templates");
  if (t.is_string()) {
    out.text = t.get<std::string>();
    return out;
  }
  std::vector<std::string> names;
  for (const nlohmann::json& named : t) {
    UT_CHECK(named.is_object() && named.contains("name") && named["name"].is_string() &&
                 named.contains("template") && named["template"].is_string(),
             out.path, ": chat_template is a list whose entries are not {name, template}");
    names.push_back(named["name"].get<std::string>());
    if (names.back() == "default") out.text = named["template"].get<std::string>();
  }
  UT_CHECK(!out.text.empty(), out.path, ": chat_template is a list of named templates (",
           fmt_names(names), ") with none named 'default', the one transformers uses");
  return out;
}

}  // namespace unitrain
