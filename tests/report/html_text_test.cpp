#include "unitrain/report/html_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace unitrain::report {

TEST(HtmlText, EscapesEveryCharacterThatEndsTextOrAnAttribute) {
  EXPECT_EQ(html_escape(R"(<script>alert("x" & 'y')</script>)"),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;");
  EXPECT_EQ(html_escape("runs/digits-mlp · ü"), "runs/digits-mlp · ü");  // UTF-8 passes
  EXPECT_EQ(html_escape("&amp;"), "&amp;amp;");                          // escaped again
  EXPECT_EQ(html_escape(""), "");
}

TEST(HtmlText, ValuesReadWithFourSignificantDigits) {
  EXPECT_EQ(format_value(0.9052924791086351), "0.9053");
  EXPECT_EQ(format_value(1.9957213401794434), "1.996");
  EXPECT_EQ(format_value(0), "0");
  EXPECT_EQ(format_value(15630.4), "15630");
  EXPECT_EQ(format_value(123456.0), "1.235e+05");
  EXPECT_EQ(format_value(2e-5), "2e-05");
  EXPECT_EQ(format_value(std::nan("")), "NaN");
  EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-inf");
}

TEST(HtmlText, DurationsReadInTheirUnit) {
  EXPECT_EQ(format_duration(0.276), "0.28 s");
  EXPECT_EQ(format_duration(42.06), "42.1 s");
  EXPECT_EQ(format_duration(185), "3 min 05 s");
  EXPECT_EQ(format_duration(7385), "2 h 03 min");
  EXPECT_EQ(format_duration(std::nan("")), "?");
}

}  // namespace unitrain::report
