#include "unitrain/core/json_excerpt.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace unitrain {
namespace {

TEST(JsonExcerpt, LongValuesAreCutToALineWithTheirLength) {
  EXPECT_EQ(json_excerpt(nlohmann::json({1, "a"})), "[1,\"a\"]");
  const std::string cut = json_excerpt(nlohmann::json(std::string(50'000'000, 'x')));
  EXPECT_LT(cut.size(), 120u);
  EXPECT_NE(cut.find("... (50000000 bytes)"), std::string::npos) << cut;
  EXPECT_LT(json_excerpt(nlohmann::json(std::vector<int>(100000, 7))).size(), 120u);
  // A cut never splits a character.
  EXPECT_EQ(text_excerpt("\xc3\xa9\xc3\xa9", 3), "\xc3\xa9... (4 bytes)");
}

TEST(JsonExcerpt, ParseErrorsLoseNlohmannsIdAndStayShort) {
  try {
    (void)nlohmann::json::parse("{\"a\": \"" + std::string(100000, 'b'));
    FAIL() << "parsed";
  } catch (const nlohmann::json::exception& e) {
    const std::string text = json_error_text(e);
    EXPECT_EQ(text.rfind("parse error at line 1", 0), 0u) << text;
    EXPECT_EQ(text.find("json.exception"), std::string::npos) << text;
    EXPECT_LT(text.size(), 200u);
  }
}

}  // namespace
}  // namespace unitrain
