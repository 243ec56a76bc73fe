#pragma once
// A Jinja chat template (tokenizer_config.json's chat_template), run in C++ as transformers
// runs it: Jinja2's ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, its
// tojson, raise_exception and strftime_now, and {% generation %} marking the assistant's text.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace unitrain::jinja {

struct Stmt;

/// What a render may spend: loop steps, output bytes and call depth, so that a template never
/// hangs or exhausts the machine (Jinja2's sandbox bounds range() alone).
struct RenderLimits {
  int64_t steps = 1'000'000;
  int64_t output_bytes = 64 << 20;
  int depth = 200;
};

/// A rendered template: its text and the byte ranges [begin, end) of each {% generation %}
/// block's output, in order.
struct Rendered {
  std::string text;
  std::vector<std::pair<size_t, size_t>> generation;
};

/// A parsed template. render() is const and may run on many threads at once.
///
/// The subset it runs is what hub chat templates use: {{ }}, {# #}, whitespace control, raw;
/// if/elif/else, for (else, a filter, unpacking, loop.*, break, continue), set (names, tuples,
/// namespace attributes, blocks), macro, filter blocks, with, generation; literals, operators,
/// slices, calls with keywords; str, dict and list methods that change nothing; the filters
/// and tests of jinja2/filters.py and tests.py that chat templates call; the globals range,
/// namespace, dict, raise_exception and strftime_now. Anything else (include, import, call
/// blocks, recursive loops, the rest of Python's methods) is a JinjaError of type Unsupported
/// naming it and its line, never silently skipped.
class Template {
 public:
  /// Parses `source`; JinjaError naming `what` and the line for a syntax error.
  Template(std::string_view source, std::string what);
  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

  /// Renders with `variables` (a JSON object: messages, add_generation_prompt, bos_token, ...).
  /// strftime_now reads `now` (seconds since the epoch, local time) or the clock. JinjaError
  /// naming the template and line when it raises (raise_exception: TemplateError with its
  /// message), reads an undefined value's attribute, calls what unitrain does not run, or
  /// exceeds `limits`.
  Rendered render(const nlohmann::ordered_json& variables, std::optional<int64_t> now = {},
                  const RenderLimits& limits = {}) const;

  /// Whether the template has {% generation %} blocks (the assistant's text is marked).
  bool marks_generation() const;
  /// Whether it calls strftime_now (its text then depends on the day it renders).
  bool reads_clock() const;
  const std::string& what() const { return what_; }

 private:
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
  std::string what_;
  bool generation_ = false, clock_ = false;
};

}  // namespace unitrain::jinja
