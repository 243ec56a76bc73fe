#include "unitrain/text/chat_template.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "unitrain/core/error.h"
#include "unitrain/core/file_bytes.h"

namespace unitrain {
namespace {

bool is_jinja(const std::string& text) {
  return text.find("{%") != std::string::npos || text.find("{{") != std::string::npos ||
         text.find("{#") != std::string::npos;
}

/// A plain template in the format of the Jinja one `jinja`, for the families whose turns are
/// "header, content, end" (a hint in the refusal; "" when the format is not one of them). In
/// YAML's double quotes, so that pasted into a config its \n are line breaks (in single quotes
/// they would be a backslash and an n, which the run would train on).
std::string plain_template_hint(const std::string& jinja) {
  if (jinja.find("<|start_header_id|>") != std::string::npos) {  // Llama 3
    return ", e.g. chat_template: \"<|start_header_id|>{role}<|end_header_id|>\\n\\n{content}"
           "<|eot_id|>\" (Llama 3's turns; YAML's double quotes make \\n a line break)";
  }
  if (jinja.find("<|im_start|>") != std::string::npos) {  // ChatML: Qwen, others
    return ", e.g. chat_template: \"<|im_start|>{role}\\n{content}<|im_end|>\\n\" (ChatML's "
           "turns; YAML's double quotes make \\n a line break)";
  }
  return "";
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
  if (!config.contains("chat_template") || config["chat_template"].is_null()) return {};
  const nlohmann::json& t = config["chat_template"];
  UT_CHECK(t.is_string() || t.is_array(), path.string(),
           ": chat_template is neither a string nor a list of named templates");
  const std::string text = t.is_string() ? t.get<std::string>() : "";
  if (t.is_string() && !is_jinja(text)) return {text, ""};
  return {"", path.string() + ": its chat_template is " +
                  (t.is_array() ? "a list of named Jinja templates" : "a Jinja template") +
                  ", which unitrain cannot run; give data.<split>.args.chat_template as plain "
                  "text with {role} and {content}" +
                  plain_template_hint(text)};
}

}  // namespace unitrain
