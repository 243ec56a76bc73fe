#include "unitrain/core/train_unit.h"

#include <fmt/format.h>

#include <cctype>
#include <numeric>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

bool unit_from_word(const std::string& word, TrainUnit::Unit* unit) {
  static const std::pair<const char*, TrainUnit::Unit> kWords[] = {
      {"epochs", TrainUnit::Unit::Epochs},   {"epoch", TrainUnit::Unit::Epochs},
      {"ep", TrainUnit::Unit::Epochs},       {"steps", TrainUnit::Unit::Steps},
      {"step", TrainUnit::Unit::Steps},      {"st", TrainUnit::Unit::Steps},
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
  const std::string forms =
      "write e.g. '10 epochs', '0.5 epochs', '500 steps' or '20000 samples' (short: 10ep, 500st, "
      "20000sa)";
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  size_t digits_start = i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  UT_CHECK(i > digits_start, key, ": '", text, "' is not a duration; ", forms);
  std::string number = text.substr(digits_start, i - digits_start);
  std::string decimals;  // after a '.': a fraction (epochs only)
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      decimals += text[i++];
    }
    UT_CHECK(!decimals.empty(), key, ": '", text, "' is not a duration; ", forms);
    UT_CHECK(decimals.size() <= 6, key, ": '", text, "' has more than 6 decimals");
  }
  UT_CHECK(number.size() + decimals.size() <= 15, key, ": '", text, "' is too large");
  int64_t count = std::stoll(number + decimals);
  int64_t per = 1;
  for (size_t d = 0; d < decimals.size(); ++d) per *= 10;
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
  UT_CHECK(unit_from_word(word, &out.unit), key, ": unknown unit '", word, "' in '", text, "'; ",
           forms);
  const int64_t g = std::gcd(count, per);  // 0.50 epochs = 1 / 2
  out.count = g > 0 ? count / g : count;
  out.per = g > 0 ? per / g : per;
  UT_CHECK(out.per == 1 || out.unit == Unit::Epochs, key, ": '", text,
           "': steps and samples are whole numbers (a fraction is for epochs, e.g. '0.5 epochs')");
  return out;
}

std::string TrainUnit::str() const {
  const char* name = unit == Unit::Epochs ? "epoch" : unit == Unit::Steps ? "step" : "sample";
  if (per != 1) return fmt::format("{} {}s", double(count) / double(per), name);
  return std::to_string(count) + " " + name + (count == 1 ? "" : "s");
}

}  // namespace unitrain
