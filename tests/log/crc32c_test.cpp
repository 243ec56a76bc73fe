// CRC-32C and TFRecord framing against values Debian's python3-crc32c computed
// (make_crc32c_expected.py wrote crc32c_expected.json).
#include "unitrain/log/crc32c.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "unitrain/log/tfrecord_writer.h"

namespace unitrain {
namespace {

nlohmann::json load_crc_cases() {
  std::ifstream in(test::source_dir() + "/tests/log/crc32c_expected.json");
  EXPECT_TRUE(in.good()) << "missing tests/log/crc32c_expected.json";
  return nlohmann::json::parse(in);
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

TEST(Crc32c, MatchesPythonCrc32c) {
  const nlohmann::json expected = load_crc_cases();
  ASSERT_GE(expected["cases"].size(), 5u);
  for (const auto& c : expected["cases"]) {
    const std::string data = from_hex(c["data"]);
    EXPECT_EQ(crc32c(data.data(), data.size()), c["crc32c"].get<uint32_t>()) << c["data"];
    EXPECT_EQ(masked_crc32c(data.data(), data.size()), c["masked"].get<uint32_t>()) << c["data"];
  }
}

TEST(Crc32c, CheckValueAndContinuation) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);  // the standard check value
  const nlohmann::json c = load_crc_cases()["continued"];
  const std::string a = from_hex(c["first"]), b = from_hex(c["second"]);
  EXPECT_EQ(crc32c(b.data(), b.size(), crc32c(a.data(), a.size())), c["crc32c"].get<uint32_t>());
  const std::string ab = a + b;
  EXPECT_EQ(crc32c(ab.data(), ab.size()), c["crc32c"].get<uint32_t>());
}

TEST(TfRecordFrame, MatchesPythonFraming) {
  for (const auto& c : load_crc_cases()["cases"]) {
    const std::string data = from_hex(c["data"]);
    EXPECT_EQ(tfrecord_frame(data), from_hex(c["frame"])) << c["data"];
  }
}

}  // namespace
}  // namespace unitrain
