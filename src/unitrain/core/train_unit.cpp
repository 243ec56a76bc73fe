#include "unitrain/core/train_unit.h"

#include <cctype>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

bool unit_from_word(const std::string& word, TrainUnit::Unit* unit) {
  static const std::pair<const char*, TrainUnit::Unit> kWords[] = {
      {"epochs", TrainUnit::Unit::Epochs}, {"epoch", TrainUnit::Unit::Epochs},
      {"ep", TrainUnit::Unit::Epochs},     {"steps", TrainUnit::Unit::Steps},
      {"step", TrainUnit::Unit::Steps},    {"st", TrainUnit::Unit::Steps},
      {"samples", TrainUnit::Unit::Samples}, {"sample", TrainUnit::Unit::Samples},
      {"sa", TrainUnit::Unit::Samples},
  };
  for (const auto& [w, u] : kWords) {
    if (word == w) {
      *unit = u;
      return true;
    }
  }
  return false;
}

}  // namespace

TrainUnit TrainUnit::parse(const std::string& text, const std::string& key) {
  const std::string forms = "write e.g. '10 epochs', '500 steps' or '20000 samples' (short: 10ep, 500st, 20000sa)";
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  size_t digits_start = i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  UT_CHECK(i > digits_start, key, ": '", text, "' is not a duration; ", forms);
  std::string number = text.substr(digits_start, i - digits_start);
  UT_CHECK(number.size() <= 15, key, ": '", text, "' is too large");
  int64_t count = std::stoll(number);
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::string word;
  while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) {
    word += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    ++i;
  }
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  UT_CHECK(i == text.size(), key, ": '", text, "' is not a duration; ", forms);
  UT_CHECK(!word.empty(), key, ": '", text, "' has no unit; ", forms);
  TrainUnit out;
  out.count = count;
  UT_CHECK(unit_from_word(word, &out.unit), key, ": unknown unit '", word, "' in '", text, "'; ",
           forms);
  return out;
}

std::string TrainUnit::str() const {
  const char* name = unit == Unit::Epochs ? "epoch" : unit == Unit::Steps ? "step" : "sample";
  return std::to_string(count) + " " + name + (count == 1 ? "" : "s");
}

}  // namespace unitrain
