#include "unitrain/text/hf_tokenizer/pattern.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "unitrain/core/error.h"
#include "unitrain/text/hf_tokenizer/unicode_text.h"

namespace unitrain::hf {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

/// One thread's match context and JIT stack: a long run of spaces can need more than PCRE2's
/// default 32 KiB machine stack under `\s+(?!\S)`.
struct ThreadMatchContext {
  ThreadMatchContext() {
    stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    context = pcre2_match_context_create(nullptr);
    if (stack && context) pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~ThreadMatchContext() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
  }
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_context* context = nullptr;
};

/// `pattern` for a message: at most its first 200 bytes (whole code points), then "...".
std::string quoted(const std::string& pattern) {
  constexpr size_t kShown = 200;
  if (pattern.size() <= kShown) return "'" + pattern + "'";
  size_t end = kShown;
  while (end > 0 && (static_cast<unsigned char>(pattern[end]) & 0xC0) == 0x80) --end;
  return "'" + pattern.substr(0, end) + "...' (" + std::to_string(pattern.size()) + " bytes)";
}

}  // namespace

struct Pattern::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

Pattern::Pattern(const std::string& pattern, bool literal, const std::string& where)
    : code_(std::make_unique<Code>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  const uint32_t options =
      PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK | (literal ? PCRE2_LITERAL : 0);
  UT_CHECK(is_valid_utf8(pattern), where, ": the pattern is not valid UTF-8");
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                              &error, &offset, nullptr);
  UT_CHECK(code_->code != nullptr, where, ": the regular expression ", quoted(pattern),
           " does not compile (PCRE2 at offset ", offset, ": ", pcre2_message(error), ")");
  code_->jit = pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE) == 0;
}

Pattern::~Pattern() = default;

void Pattern::for_each_match(std::string_view text,
                             const std::function<void(size_t, size_t)>& on_match) const {
  thread_local ThreadMatchContext thread_context;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(code_->code, nullptr), &pcre2_match_data_free);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(code_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK,
                               data.get(), thread_context.context);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    UT_CHECK_TRAIN(rc >= 0,
                   "tokenizer: the regular expression failed on a text: ", pcre2_message(rc));
    const PCRE2_SIZE* v = pcre2_get_ovector_pointer(data.get());
    const size_t begin = v[0], end = v[1];
    if (end > begin) {
      on_match(begin, end);
      start = end;
    } else {  // an empty match: step over one character
      if (begin >= text.size()) return;
      start = begin + utf8_length(static_cast<unsigned char>(text[begin]));
    }
  }
}

}  // namespace unitrain::hf
