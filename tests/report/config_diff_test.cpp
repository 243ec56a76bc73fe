#include "unitrain/report/config_diff.h"

#include <gtest/gtest.h>

namespace unitrain::report {

TEST(ConfigDiff, FlattensMapsByKeyAndListsOfSectionsByIndex) {
  const Config c = Config::from_string(
      "name: a\nmodel: {type: mlp, args: {sizes: [64, 32, 10]}, init_from: ~}\n"
      "objective:\n  losses:\n    - {type: cross_entropy, args: {}}\n    - {type: mse}\n"
      "user: {}\nwarmup: 1 epoch\n");
  const FlatConfig flat = flatten_config(c);
  const FlatConfig expected = {{"name", "a"},
                               {"model.type", "mlp"},
                               {"model.args.sizes", "[64, 32, 10]"},
                               {"model.init_from", "null"},
                               {"objective.losses.0.type", "cross_entropy"},
                               {"objective.losses.0.args", "{}"},
                               {"objective.losses.1.type", "mse"},
                               {"user", "{}"},
                               {"warmup", "1 epoch"}};
  EXPECT_EQ(flat, expected);
}

TEST(ConfigDiff, KeysThatDifferOrAreMissingInARunAreMarked) {
  const FlatConfig a = {{"name", "a"}, {"seed", "42"}, {"optimizer.lr", "2.0e-3"}};
  const FlatConfig b = {{"name", "b"}, {"seed", "42"}, {"optimizer.lr", "1.0e-3"}, {"extra", "1"}};
  const std::vector<ConfigRow> rows = compare_configs({a, b});
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].key, "name");
  EXPECT_TRUE(rows[0].differs);
  EXPECT_EQ(rows[1].key, "seed");
  EXPECT_FALSE(rows[1].differs);
  EXPECT_EQ(rows[2].key, "optimizer.lr");
  EXPECT_TRUE(rows[2].differs);
  EXPECT_EQ(*rows[2].values[1], "1.0e-3");
  EXPECT_EQ(rows[3].key, "extra");  // only in b: different, absent in a
  EXPECT_TRUE(rows[3].differs);
  EXPECT_FALSE(rows[3].values[0].has_value());
  // One config differs from nothing.
  for (const auto& row : compare_configs({a})) EXPECT_FALSE(row.differs) << row.key;
}

}  // namespace unitrain::report
