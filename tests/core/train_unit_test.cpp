#include "unitrain/core/train_unit.h"

#include <gtest/gtest.h>

#include "unitrain/core/error.h"

namespace unitrain {

TEST(TrainUnit, ParsesLongAndShortForms) {
  EXPECT_EQ(TrainUnit::parse("10 epochs"), TrainUnit::epochs(10));
  EXPECT_EQ(TrainUnit::parse("1 epoch"), TrainUnit::epochs(1));
  EXPECT_EQ(TrainUnit::parse("3ep"), TrainUnit::epochs(3));
  EXPECT_EQ(TrainUnit::parse("500 steps"), TrainUnit::steps(500));
  EXPECT_EQ(TrainUnit::parse(" 7st "), TrainUnit::steps(7));
  EXPECT_EQ(TrainUnit::parse("20000 samples"), TrainUnit::samples(20000));
  EXPECT_EQ(TrainUnit::parse("5 SA"), TrainUnit::samples(5));
}

TEST(TrainUnit, CanonicalForm) {
  EXPECT_EQ(TrainUnit::epochs(1).str(), "1 epoch");
  EXPECT_EQ(TrainUnit::steps(500).str(), "500 steps");
  EXPECT_EQ(TrainUnit::samples(2).str(), "2 samples");
}

TEST(TrainUnit, EpochsMayBeAFraction) {
  const TrainUnit half = TrainUnit::parse("0.50 epochs");
  EXPECT_EQ(half.count, 1);
  EXPECT_EQ(half.per, 2);
  EXPECT_TRUE(half.fractional());
  EXPECT_EQ(half.str(), "0.5 epochs");
  EXPECT_EQ(TrainUnit::parse("2.25ep").str(), "2.25 epochs");
  EXPECT_EQ(TrainUnit::parse("3.0 epochs"), TrainUnit::epochs(3));
  for (const char* bad : {"1.5 steps", "0.5 samples", "1. epochs", "0.1234567 epochs"}) {
    EXPECT_THROW(TrainUnit::parse(bad, "train.val_every"), ConfigError) << bad;
  }
  try {
    TrainUnit::parse("1.5 steps", "train.val_every");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("a fraction is for epochs, e.g. '0.5 epochs'"),
              std::string::npos)
        << e.what();
  }
}

TEST(TrainUnit, RejectsBadText) {
  for (const char* bad : {"", "ten epochs", "10", "10 parsecs", "10 epochs extra", "-1 steps"}) {
    EXPECT_THROW(TrainUnit::parse(bad, "train.max_length"), ConfigError) << bad;
  }
  try {
    TrainUnit::parse("10 parsecs", "train.max_length");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("train.max_length"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("parsecs"), std::string::npos);
  }
}

}  // namespace unitrain
