#include "unitrain/core/schema.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/core/registry.h"

namespace unitrain {
namespace {

Schema train_schema() {
  Schema s;
  s.add("lr", Type::Float).def(1e-3).gt(0).help("learning rate");
  s.add("batch_size", Type::Int).def(32).gt(0).help("examples per batch");
  s.add("max_length", Type::Duration).def("10 epochs").help("how long");
  s.add("precision", Type::String).def("fp32").choices({"fp32", "bf16-mixed"});
  s.add("sizes", Type::IntList).def("[1, 2]").min(1);
  s.add("name", Type::String).help("required name");
  return s;
}

Registry<int>& widgets() {
  static Registry<int>* r = [] {
    auto* reg = new Registry<int>("widget");
    Schema args;
    args.add("size", Type::Int).def(3).min(1).help("widget size");
    reg->add("round", "a round widget", args,
             [](const Config& a) { return int(a.get_int("size")); });
    reg->add("square", "a square widget", Schema(), [](const Config&) { return 4; });
    return reg;
  }();
  return *r;
}

}  // namespace

TEST(Schema, FillsDefaultsAndCanonicalisesDurations) {
  Config c = train_schema().resolve(Config::from_string("name: x\nmax_length: 3ep\n"));
  EXPECT_DOUBLE_EQ(c.get_double("lr"), 1e-3);
  EXPECT_EQ(c.get_int("batch_size"), 32);
  EXPECT_EQ(c.get_string("max_length"), "3 epochs");
  EXPECT_EQ(c.get_int_list("sizes"), (std::vector<int64_t>{1, 2}));
}

TEST(Schema, ExplicitNullWinsOverADefaultOnlyWhenNullable) {
  Schema s;
  s.add("every", Type::Duration).def("1 epoch").nullable();
  s.add("lr", Type::Float).def(0.1);
  EXPECT_EQ(s.resolve(Config::from_string("{}")).get_string("every"), "1 epoch");
  Config c = s.resolve(Config::from_string("{every: null, lr: null}"));
  EXPECT_FALSE(c.has("every"));
  EXPECT_DOUBLE_EQ(c.get_double("lr"), 0.1);  // not nullable: null means "the default"
  EXPECT_FALSE(s.resolve(c).has("every"));    // resolving again keeps it
}

TEST(Schema, ErrorsNameKeyAndValue) {
  Schema s = train_schema();
  std::string msg =
      test::config_error_of([&] { s.resolve(Config::from_string("name: x\nlrr: 1\n")); });
  EXPECT_NE(msg.find("unknown key 'lrr'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'lr'"), std::string::npos) << msg;
  msg = test::config_error_of([&] { s.resolve(Config::from_string("name: x\nlr: -1\n")); });
  EXPECT_NE(msg.find("lr must be > 0, got -1"), std::string::npos) << msg;
  msg =
      test::config_error_of([&] { s.resolve(Config::from_string("name: x\nbatch_size: many\n")); });
  EXPECT_NE(msg.find("batch_size: expected int, got 'many'"), std::string::npos) << msg;
  msg =
      test::config_error_of([&] { s.resolve(Config::from_string("name: x\nbatch_size: 1e3\n")); });
  EXPECT_NE(msg.find("whole number"), std::string::npos) << msg;
  msg = test::config_error_of([&] { s.resolve(Config::from_string("name: x\nprecision: fp8\n")); });
  EXPECT_NE(msg.find("'fp8' is not one of: fp32, bf16-mixed"), std::string::npos) << msg;
  msg = test::config_error_of([&] { s.resolve(Config::from_string("lr: 1\n")); });
  EXPECT_NE(msg.find("missing required key name"), std::string::npos) << msg;
  msg = test::config_error_of([&] { s.resolve(Config::from_string("name: x\nsizes: [1, 0]\n")); });
  EXPECT_NE(msg.find("sizes[1] must be >= 1, got 0"), std::string::npos) << msg;
}

TEST(Schema, NestedSectionsCarryTheirPath) {
  auto inner = std::make_shared<Schema>(train_schema());
  Schema outer;
  outer.add("train", Type::Section).section(inner);
  std::string msg = test::config_error_of(
      [&] { outer.resolve(Config::from_string("train: {name: a, lr: 0}\n")); });
  EXPECT_NE(msg.find("train.lr must be > 0, got 0"), std::string::npos) << msg;
}

TEST(Schema, ComponentSectionsValidateTheirArgs) {
  widgets();
  auto extra = std::make_shared<Schema>();
  extra->add("weight", Type::Float).def(1.0);
  Schema s;
  s.add("widget", Type::Section).component("widget", "square").section(extra);
  s.add("more", Type::SectionList).component("widget");
  Config c = s.resolve(Config::from_string("widget: {type: round}\nmore: [{type: square}]\n"));
  EXPECT_EQ(c.at("widget").at("args").get_int("size"), 3);
  EXPECT_DOUBLE_EQ(c.at("widget").get_double("weight"), 1.0);
  EXPECT_EQ(widgets().create(c.at("widget")), 3);
  EXPECT_EQ(widgets().create(c.list("more")[0]), 4);
  Config d = s.resolve(Config());
  EXPECT_EQ(d.at("widget").get_string("type"), "square");

  std::string msg =
      test::config_error_of([&] { s.resolve(Config::from_string("widget: {type: rund}\n")); });
  EXPECT_NE(msg.find("unknown widget 'rund' at widget.type"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'round'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("known: round, square"), std::string::npos) << msg;
  msg = test::config_error_of(
      [&] { s.resolve(Config::from_string("widget: {type: round, args: {size: 0}}\n")); });
  EXPECT_NE(msg.find("widget.args.size must be >= 1, got 0"), std::string::npos) << msg;
  msg = test::config_error_of([&] { s.resolve(Config::from_string("more: [{args: {}}]\n")); });
  EXPECT_NE(msg.find("missing required key more.0.type"), std::string::npos) << msg;
}

TEST(Schema, DuplicateRegistrationIsAnError) {
  widgets();
  EXPECT_THROW(widgets().add("round", "again", Schema(), [](const Config&) { return 0; }),
               ConfigError);
}

TEST(Schema, FloatDefaultsReadAsPeopleWriteThem) {
  Schema s;
  EXPECT_EQ(*s.add("a", Type::Float).def(0.1).default_yaml(), "0.1");
  EXPECT_EQ(*s.add("b", Type::Float).def(0.99).default_yaml(), "0.99");
  EXPECT_EQ(*s.add("c", Type::Float).def(1e-7).default_yaml(), "1.0e-07");  // a float in YAML 1.1
  EXPECT_EQ(*s.add("d", Type::Float).def(100.0).default_yaml(), "100.0");
  EXPECT_EQ(*s.add("e", Type::Float).def(3e-4).default_yaml(), "0.0003");
  EXPECT_EQ(s.add("f", Type::Float).def(0.2).min(0.1).max(0.3).allowed(), "[0.1, 0.3]");
  Config c = s.resolve(Config::from_string("{}"));
  EXPECT_NE(c.dump().find("a: 0.1\n"), std::string::npos) << c.dump();
  EXPECT_DOUBLE_EQ(c.get_double("c"), 1e-7);  // and they read back exactly
  EXPECT_DOUBLE_EQ(c.get_double("e"), 3e-4);
  EXPECT_NE(s.markdown("").find("`0.99`"), std::string::npos);
}

TEST(Schema, MarkdownListsEveryKey) {
  std::string md = train_schema().markdown("train");
  for (const char* key : {"`train.lr`", "`train.batch_size`", "`train.max_length`", "> 0",
                          "one of: fp32, bf16-mixed", "required"}) {
    EXPECT_NE(md.find(key), std::string::npos) << key << "\n" << md;
  }
}

TEST(ClosestMatch, SuggestsOnlyPlausibleTypos) {
  EXPECT_EQ(closest_match("lrr", {"lr", "seed"}), "lr");
  EXPECT_EQ(closest_match("optimiser", {"optimizer", "model"}), "optimizer");
  EXPECT_EQ(closest_match("zzzzzz", {"lr", "seed"}), "");
}

}  // namespace unitrain
