#include "unitrain/text/jinja_chat.h"

#include <nlohmann/json.hpp>

#include "unitrain/core/error.h"
#include "unitrain/text/jinja/template.h"

namespace unitrain {
namespace {

using Json = nlohmann::ordered_json;

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Json first(const Json& messages, size_t n) {
  Json out = Json::array();
  for (size_t i = 0; i < n; ++i) out.push_back(messages[i]);
  return out;
}

/// What transformers passes a chat template: its variables, tools and documents (None unless the
/// example gives them), the example's `extra`, the messages and the prompt flag.
Json variables_for(const Json& base, const Json& messages, bool add_generation_prompt,
                   const Json& extra) {
  Json vars = base;
  vars["tools"] = nullptr;
  vars["documents"] = nullptr;
  if (extra.is_object()) {
    for (const auto& [k, v] : extra.items()) vars[k] = v;
  }
  vars["messages"] = messages;
  vars["add_generation_prompt"] = add_generation_prompt;
  return vars;
}

const char* const kHint =
    " Set chat_loss: last to train the last assistant turn alone (TRL's prompt-completion), or "
    "give a chat_template that marks the assistant's text with {% generation %}";

}  // namespace

JinjaChat::JinjaChat(const std::string& source, const nlohmann::ordered_json& variables,
                     const std::string& what, std::optional<int64_t> now)
    : template_(std::make_unique<jinja::Template>(source, what)),
      variables_(std::make_unique<Json>(variables)),
      now_(now) {}

JinjaChat::~JinjaChat() = default;

std::string JinjaChat::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                              const nlohmann::ordered_json& extra) const {
  return template_->render(variables_for(*variables_, messages, add_generation_prompt, extra), now_)
      .text;
}

JinjaChat::Turns JinjaChat::assistant_turns(const nlohmann::ordered_json& messages, bool last_only,
                                            const nlohmann::ordered_json& extra,
                                            const std::string& where) const {
  Turns turns;
  if (template_->marks_generation()) {
    jinja::Rendered r = template_->render(variables_for(*variables_, messages, false, extra), now_);
    turns.text = std::move(r.text);
    turns.assistant = std::move(r.generation);
    if (last_only && turns.assistant.size() > 1)
      turns.assistant.erase(turns.assistant.begin(), turns.assistant.end() - 1);
    return turns;
  }
  turns.text = render(messages, false, extra);
  // A template that ignores add_generation_prompt ends every rendering with the assistant's
  // header: that tail (what an empty conversation renders, as far as it ends the whole) is the
  // next turn's, not this one's.
  std::string tail;
  if (render(messages, true, extra) == turns.text) {
    try {
      const std::string empty = render(Json::array(), false, extra);
      size_t n = 0;
      while (n < empty.size() && n < turns.text.size() &&
             empty[empty.size() - 1 - n] == turns.text[turns.text.size() - 1 - n]) {
        ++n;
      }
      tail = empty.substr(empty.size() - n);
    } catch (const ConfigError&) {
      tail.clear();  // the template needs a message: no constant tail to find
    }
  }
  std::vector<size_t> assistant;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].is_object() && messages[i].value("role", "") == "assistant")
      assistant.push_back(i);
  }
  if (last_only && !assistant.empty()) assistant.erase(assistant.begin(), assistant.end() - 1);
  for (size_t i : assistant) {
    const std::string turn = "assistant turn (message " + std::to_string(i + 1) + ")";
    std::string prompt, upto;
    try {
      prompt = render(first(messages, i), true, extra);
      upto = render(first(messages, i + 1), false, extra);
    } catch (const ConfigError& e) {
      throw ConfigError(where + ": the " + turn +
                        " cannot be found by rendering the messages "
                        "before it: " +
                        e.what() + "." + kHint);
    }
    if (!tail.empty() && ends_with(upto, tail)) upto.resize(upto.size() - tail.size());
    UT_CHECK(starts_with(upto, prompt), where, ": the ", turn,
             " cannot be found: the chat "
             "template renders the messages before it otherwise once it follows (it is not a "
             "prompt the model continues).",
             kHint);
    UT_CHECK(starts_with(turns.text, upto), where, ": the ", turn,
             " cannot be found: the chat "
             "template renders it otherwise once later messages follow (e.g. Qwen3 drops an "
             "earlier turn's thinking).",
             kHint);
    turns.assistant.emplace_back(prompt.size(), upto.size());
  }
  return turns;
}

bool JinjaChat::marks_generation() const { return template_->marks_generation(); }
bool JinjaChat::reads_clock() const { return template_->reads_clock(); }

}  // namespace unitrain
