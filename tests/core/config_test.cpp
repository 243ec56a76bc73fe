#include "unitrain/core/config.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
TEST(Config, TypedGettersNameTheKey) {
  Config c = Config::from_string("optimizer: {lr: 3e-4, type: adam, betas: [0.9, 0.99]}\n");
  Config opt = c.at("optimizer");
  EXPECT_DOUBLE_EQ(opt.get_double("lr"), 3e-4);
  EXPECT_EQ(opt.get_string("type"), "adam");
  EXPECT_EQ(opt.get_double_list("betas"), (std::vector<double>{0.9, 0.99}));
  std::string msg = test::config_error_of([&] { opt.get_int("type"); });
  EXPECT_NE(msg.find("optimizer.type"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'adam'"), std::string::npos) << msg;
  msg = test::config_error_of([&] { c.at("model"); });
  EXPECT_NE(msg.find("missing key model"), std::string::npos) << msg;
}

TEST(Config, BrokenYamlNamesTheLine) {
  std::string msg =
      test::config_error_of([] { Config::from_string("a: 1\nb: [1, 2\nc: 3\n", "run.yaml"); });
  EXPECT_NE(msg.find("run.yaml:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("broken YAML"), std::string::npos) << msg;
}

TEST(Config, ASecondDocumentIsRefusedNamingItsLine) {
  std::string msg = test::config_error_of(
      [] { Config::from_string("seed: 1\nmodel: {type: mlp}\n---\nseed: 2\n", "run.yaml"); });
  EXPECT_NE(msg.find("run.yaml:4: a second YAML document"), std::string::npos) << msg;
  // A marker before the only document is one document.
  EXPECT_EQ(Config::from_string("---\nseed: 1\n", "run.yaml").get_int("seed"), 1);
}

TEST(Config, DuplicateKeyNamesTheKeyAndBothLines) {
  std::string msg = test::config_error_of([] {
    Config::from_string("optimizer:\n  lr: 0.1\n  type: sgd\n  lr: 0.5\nepochs: 2\n", "run.yaml");
  });
  EXPECT_NE(msg.find("run.yaml:4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'optimizer.lr'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lines 2 and 4"), std::string::npos) << msg;
  msg = test::config_error_of(
      [] { Config::from_string("epochs: 1\nseed: 3\nepochs: 2\n", "r.yaml"); });
  EXPECT_NE(msg.find("'epochs' is set twice (lines 1 and 3)"), std::string::npos) << msg;
  // Inside a list of sections, and in flow style.
  msg = test::config_error_of(
      [] { Config::from_string("callbacks:\n  - {type: a, every: 1, every: 2}\n", "r.yaml"); });
  EXPECT_NE(msg.find("'callbacks[0].every'"), std::string::npos) << msg;
  // The same key in different sections is fine.
  Config c = Config::from_string("a: {lr: 1}\nb: {lr: 2}\n");
  EXPECT_EQ(c.at("b").get_int("lr"), 2);
}

TEST(Config, MissingAndEmptyFiles) {
  std::string dir = test::temp_dir();
  std::string msg = test::config_error_of([&] { Config::from_file(dir + "/nope.yaml"); });
  EXPECT_NE(msg.find("nope.yaml' does not exist"), std::string::npos) << msg;
  test::write_file(dir + "/empty.yaml", "  \n");
  msg = test::config_error_of([&] { Config::from_file(dir + "/empty.yaml"); });
  EXPECT_NE(msg.find("is empty"), std::string::npos) << msg;
}

TEST(Config, SetCreatesSectionsAndIndexesLists) {
  Config c = Config::from_string("model: {args: {sizes: [1, 2]}}\nlosses: [{weight: 1}]\n");
  c.set("optimizer.lr", "0.5");
  c.set("model.args.sizes", "[64, 10]");
  c.set("losses.0.weight", "2.5");
  EXPECT_DOUBLE_EQ(c.at("optimizer").get_double("lr"), 0.5);
  EXPECT_EQ(c.at("model").at("args").get_int_list("sizes"), (std::vector<int64_t>{64, 10}));
  EXPECT_DOUBLE_EQ(c.list("losses")[0].get_double("weight"), 2.5);
  EXPECT_THROW(c.set("losses.3.weight", "1"), ConfigError);
}

TEST(Config, MergeReplacesLeavesAndMergesMaps) {
  Config base = Config::from_string("a: {x: 1, y: 2}\nb: [1, 2]\n");
  Config top = Config::from_string("a: {y: 3}\nb: [5]\n");
  base.merge(top);
  EXPECT_EQ(base.at("a").get_int("x"), 1);
  EXPECT_EQ(base.at("a").get_int("y"), 3);
  EXPECT_EQ(base.get_int_list("b"), (std::vector<int64_t>{5}));
}

TEST(ConfigKeyReads, KeysReadThroughTheGettersAreRecordedAcrossSectionsAndCopies) {
  Config c = Config::from_string(
      "seed: 1\nmodel: {type: mlp, args: {sizes: [4, 2]}}\nlosses: [{type: mse}, {type: l1}]\n"
      "free: {a: 1, b: {c: 2}}\nnothing: null\nempty: {}\nnone: []\n");
  EXPECT_EQ(c.unread_keys(),
            (std::vector<std::string>{"seed", "model.type", "model.args.sizes", "losses.0.type",
                                      "losses.1.type", "free.a", "free.b.c"}));
  EXPECT_EQ(c.get_int("seed"), 1);
  const Config model = c.at("model");  // a section shares the record
  model.at("args").get_int_list("sizes");
  c.list("losses")[1].get_string("type");
  c.clone().at("free").mark_read("b");  // a copy too; a key marked read covers what is under it
  EXPECT_EQ(c.unread_keys(), (std::vector<std::string>{"model.type", "losses.0.type", "free.a"}));
  c.mark_read();  // the whole config
  EXPECT_TRUE(c.unread_keys().empty());
}

TEST(ConfigKeyReads, KeysSetInCodeAreTheUsersToo) {
  // Config::set on a config read from text: the key joins the ones a run warns about when
  // nothing reads them (as the same key in the text would); a replaced section's keys go.
  Config c = Config::from_string("seed: 1\nmodel: {type: mlp, args: {sizes: [4, 2]}}\n");
  c.get_int("seed");
  c.set("train.max_lenght", "3 epochs");
  c.set("model", "{type: cnn}");
  EXPECT_EQ(c.unread_keys(), (std::vector<std::string>{"train.max_lenght", "model.type"}));
  c.set("train.max_lenght", "4 epochs");  // set again: still one key
  EXPECT_EQ(c.unread_keys(), (std::vector<std::string>{"model.type", "train.max_lenght"}));
  // A copy made before keeps its own record.
  Config before = Config::from_string("seed: 1\n");
  Config copy = before.clone();
  copy.set("extra", "2");
  EXPECT_EQ(before.unread_keys(), (std::vector<std::string>{"seed"}));
  EXPECT_EQ(copy.unread_keys(), (std::vector<std::string>{"seed", "extra"}));
}

TEST(ConfigKeyReads, AConfigBuiltInCodeRecordsNothingUntilAskedTo) {
  Config c;
  c.set("train.max_length", "3 epochs");
  EXPECT_EQ(c.key_reads(), nullptr);
  EXPECT_TRUE(c.unread_keys().empty());
  c.track_reads();
  EXPECT_EQ(c.unread_keys(), (std::vector<std::string>{"train.max_length"}));
  EXPECT_TRUE(c.key_reads()->first_warning());
  EXPECT_FALSE(c.key_reads()->first_warning());
}

}  // namespace unitrain
