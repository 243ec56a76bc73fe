#pragma once
// A template's text cut into tokens as Jinja2's lexer does with transformers' settings
// (trim_blocks, lstrip_blocks, keep_trailing_newline off): text between tags, whitespace
// control applied, and the tokens inside {{ }} and {% %}.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace unitrain::jinja {

struct Token {
  enum class Type {
    Text,
    VarBegin,
    VarEnd,
    BlockBegin,
    BlockEnd,
    Name,
    String,
    Int,
    Float,
    Operator,
    End
  };
  Type type;
  std::string text;  ///< text, a name, a string's value, an operator
  int line = 1;
  int64_t integer = 0;
  double real = 0;
};

/// The tokens of `source`, ending with Type::End. EvalError (TemplateSyntaxError) with the
/// line in its message for a tag or comment left open, a character no token starts with.
std::vector<Token> tokenize(std::string_view source);

}  // namespace unitrain::jinja
