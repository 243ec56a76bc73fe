#include "apps/unitrain/starter_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/config/load_config.h"

namespace unitrain {
namespace {

std::string data_dir() {
  static const std::string dir = test::temp_dir();
  return dir;
}

std::string be32(uint32_t v) {
  std::string s;
  for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return s;
}

// The config `init` writes, resolved against the root schema (unknown keys are errors).
Config resolved(const StarterOptions& o) {
  return resolve_run_config(Config::from_string(starter_config(o), "starter.yaml"));
}

// The value at a dotted key path (`objective.losses.0.type`) of a resolved config.
template <typename T = std::string>
T value(const Config& c, const std::string& dotted) {
  YAML::Node node = YAML::Clone(c.node());
  std::stringstream parts(dotted);
  for (std::string part; std::getline(parts, part, '.');) {
    node.reset(node.IsSequence() ? node[std::stoul(part)] : node[part]);
  }
  return node.as<T>();
}

// 40 rows: features a, b; class label in 0..2; a float price.
std::string tabular_csv() {
  std::ostringstream text;
  text << "a,b,label,price\n";
  for (int i = 0; i < 40; ++i)
    text << i << "," << (i * 7) % 5 << "," << i % 3 << "," << i * 0.5 << "\n";
  return test::write_file(data_dir() + "/houses.csv", text.str());
}

}  // namespace

TEST(StarterConfig, ClassificationReadsColumnsAndClassesFromTheCsv) {
  StarterOptions o;
  o.data = tabular_csv();
  o.target = "label";
  Config c = resolved(o);
  EXPECT_EQ(value(c, "model.type"), "mlp");
  EXPECT_EQ(value<std::vector<int64_t>>(c, "model.args.sizes"), (std::vector<int64_t>{3, 128, 3}));
  EXPECT_EQ(value(c, "data.train.args.target"), "label");
  EXPECT_TRUE(value<bool>(c, "data.train.args.header"));
  EXPECT_EQ(value(c, "objective.losses.0.type"), "cross_entropy");
  EXPECT_EQ(c.get_string("name"), "houses-mlp");
}

TEST(StarterConfig, RegressionPredictsTheLastColumnByDefault) {
  StarterOptions o;
  o.task = "regression";
  o.data = tabular_csv();
  Config c = resolved(o);
  EXPECT_EQ(value(c, "data.train.args.target"), "price");
  EXPECT_EQ(value(c, "data.train.args.target_type"), "float");
  EXPECT_EQ(value<std::vector<int64_t>>(c, "model.args.sizes"), (std::vector<int64_t>{3, 128, 1}));
  EXPECT_EQ(value(c, "objective.losses.0.type"), "mse");
  // A fractional target cannot be a class: the message says which task fits.
  o.task = "classification";
  std::string msg = test::error_of<ConfigError>([&] { starter_config(o); });
  EXPECT_NE(msg.find("init with --task regression"), std::string::npos) << msg;
}

TEST(StarterConfig, UnknownTargetListsTheColumns) {
  StarterOptions o;
  o.data = tabular_csv();
  o.target = "lable";
  std::string msg = test::error_of<ConfigError>([&] { starter_config(o); });
  EXPECT_NE(msg.find("did you mean 'label'"), std::string::npos) << msg;
}

TEST(StarterConfig, ImageReadsShapeAndClassesFromIdx) {
  std::string pixels(4 * 5 * 6, '\x10');
  test::write_file(data_dir() + "/train-images-idx3-ubyte",
                   be32(0x0803) + be32(4) + be32(5) + be32(6) + pixels);
  test::write_file(data_dir() + "/train-labels-idx1-ubyte",
                   be32(0x0801) + be32(4) + std::string("\x00\x03\x01\x02", 4));
  StarterOptions o;
  o.task = "image";
  o.data = data_dir() + "/train-images-idx3-ubyte";
  Config c = resolved(o);
  EXPECT_EQ(value(c, "model.type"), "cnn");
  EXPECT_EQ(value<std::vector<int64_t>>(c, "model.args.image_size"), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(value<int64_t>(c, "model.args.classes"), 4);
  EXPECT_NE(value(c, "data.train.args.labels").find("train-labels-idx1-ubyte"), std::string::npos);
}

TEST(StarterConfig, LanguageModelReadsTheVocabularyOfTheText) {
  StarterOptions o;
  o.task = "language-model";
  o.data = test::write_file(data_dir() + "/abc.txt", std::string(200, 'a') + "bc\n");
  Config c = resolved(o);
  EXPECT_EQ(value(c, "model.type"), "transformer_lm");
  EXPECT_EQ(value<int64_t>(c, "model.args.vocab"), 4);  // a, b, c and the newline
  EXPECT_EQ(value<int64_t>(c, "model.args.seq_len"), value<int64_t>(c, "data.train.args.seq_len"));
}

TEST(StarterConfig, ErrorsNameTheTaskAndTheFile) {
  StarterOptions o;
  o.task = "clasification";
  std::string msg = test::error_of<ConfigError>([&] { starter_config(o); });
  EXPECT_NE(msg.find("did you mean 'classification'"), std::string::npos) << msg;
  o.task = "image";
  o.data = "/nonexistent/train-images-idx3-ubyte";
  msg = test::error_of<ConfigError>([&] { starter_config(o); });
  EXPECT_NE(msg.find("/nonexistent/train-labels-idx1-ubyte"), std::string::npos) << msg;
}

TEST(StarterConfig, NeverOverwritesAFile) {
  StarterOptions o;
  o.data = tabular_csv();
  o.target = "label";
  const std::string out = data_dir() + "/run.yaml";
  write_starter_config(o, out);
  std::ifstream in(out);
  std::stringstream first;
  first << in.rdbuf();
  EXPECT_EQ(first.str(), starter_config(o));
  EXPECT_NE(first.str().find("# "), std::string::npos);  // commented
  std::string msg = test::error_of<ConfigError>([&] { write_starter_config(o, out); });
  EXPECT_NE(msg.find("already exists"), std::string::npos) << msg;
  EXPECT_NE(msg.find(out), std::string::npos) << msg;
}

}  // namespace unitrain
