#include "unitrain/data/csv_dataset.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "data_test_util.h"
#include "test_util.h"

namespace unitrain {
namespace {

using test::config_error_of;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

CsvOptions options_for(const std::string& path, const std::string& target) {
  CsvOptions o;
  o.path = path;
  o.target = target;
  return o;
}

TEST(CsvDataset, ReadsFeaturesAndClassTarget) {
  std::string path = test::write_file(test::temp_dir() + "/t.csv",
                                      "a, b ,label,c\n1,2,0,3\n4.5,-5,2,6e1\n\n7,8,1,9\n");
  DatasetPtr d = load_csv(options_for(path, "label"));
  ASSERT_EQ(d->size(), 3);
  Batch e = d->get(1);
  EXPECT_TRUE(torch::equal(e.at("x"), torch::tensor({4.5f, -5.f, 60.f})));
  EXPECT_EQ(e.at("y").scalar_type(), torch::kInt64);
  EXPECT_EQ(e.at("y").dim(), 0);
  EXPECT_EQ(e.at("y").item<int64_t>(), 2);
  Batch b = d->get_batch({2, 0});
  EXPECT_TRUE(torch::equal(b.at("x"), torch::tensor({{7.f, 8.f, 9.f}, {1.f, 2.f, 3.f}})));
  EXPECT_TRUE(torch::equal(b.at("y"), torch::tensor({1, 0}, torch::kInt64)));
  EXPECT_EQ(d->info().at("num_classes"), 3);
  EXPECT_EQ(d->info().at("num_features"), 3);
}

TEST(CsvDataset, SelectedFeaturesInOrderAndFloatTarget) {
  std::string path =
      test::write_file(test::temp_dir() + "/t.csv", "name;a;b;price\nfoo;1;2;0.5\nbar;3;4;1.25\n");
  CsvOptions o = options_for(path, "price");
  o.delimiter = ";";
  o.features = {"b", "a"};  // the text column 'name' is never parsed
  o.target_type = "float";
  DatasetPtr d = load_csv(o);
  Batch b = d->get_batch({0, 1});
  EXPECT_TRUE(torch::equal(b.at("x"), torch::tensor({{2.f, 1.f}, {4.f, 3.f}})));
  EXPECT_EQ(b.at("y").sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_TRUE(torch::equal(b.at("y"), torch::tensor({{0.5f}, {1.25f}})));
}

TEST(CsvDataset, BadCellNamesFileLineAndColumn) {
  std::string path =
      test::write_file(test::temp_dir() + "/bad.csv", "a,b,label\n1,2,0\n3,oops,1\n");
  std::string msg = config_error_of([&] { load_csv(options_for(path, "label")); });
  EXPECT_TRUE(contains(msg, path)) << msg;
  EXPECT_TRUE(contains(msg, "line 3")) << msg;
  EXPECT_TRUE(contains(msg, "column 2 ('b')")) << msg;
  EXPECT_TRUE(contains(msg, "'oops'")) << msg;
}

TEST(CsvDataset, BadRowsAndTargetsAreErrors) {
  std::string dir = test::temp_dir();
  std::string ragged = test::write_file(dir + "/r.csv", "a,b,label\n1,2,0\n3,1\n");
  std::string msg = config_error_of([&] { load_csv(options_for(ragged, "label")); });
  EXPECT_TRUE(contains(msg, "line 3 has 2 cells, expected 3")) << msg;

  std::string fractional = test::write_file(dir + "/f.csv", "a,label\n1,0\n2,0.5\n");
  msg = config_error_of([&] { load_csv(options_for(fractional, "label")); });
  EXPECT_TRUE(contains(msg, "line 3")) << msg;
  EXPECT_TRUE(contains(msg, "not a class index")) << msg;

  std::string empty_cell = test::write_file(dir + "/e.csv", "a,label\n,0\n");
  msg = config_error_of([&] { load_csv(options_for(empty_cell, "label")); });
  EXPECT_TRUE(contains(msg, "line 2, column 1 ('a')")) << msg;
}

TEST(CsvDataset, ATargetOfNamesBecomesIndicesOfTheSortedNamesOrOfClasses) {
  std::string path = test::write_file(test::temp_dir() + "/pets.csv",
                                      "w,kind\n1,dog\n2,cat\n3,\"bird, small\"\n4,dog\n");
  DatasetPtr d = load_csv(options_for(path, "kind"));
  EXPECT_EQ(d->class_names(), (std::vector<std::string>{"bird, small", "cat", "dog"}));
  EXPECT_EQ(d->info().at("num_classes"), 3);
  EXPECT_TRUE(
      torch::equal(d->get_batch({0, 1, 2, 3}).at("y"), torch::tensor({2, 1, 0, 2}, torch::kInt64)));
  // `classes` fixes the order (and may hold classes this file lacks); numbers are names then.
  CsvOptions o = options_for(path, "kind");
  o.classes = {"dog", "cat", "bird, small", "fish"};
  d = load_csv(o);
  EXPECT_EQ(d->info().at("num_classes"), 4);
  EXPECT_TRUE(
      torch::equal(d->get_batch({0, 1, 2, 3}).at("y"), torch::tensor({0, 1, 2, 0}, torch::kInt64)));
  o.classes = {"dog", "cat"};
  std::string msg = config_error_of([&] { load_csv(o); });
  EXPECT_TRUE(contains(msg,
                       "line 4, column 2 ('kind'): class 'bird, small' is not one of the 2 "
                       "classes (dog, cat)"))
      << msg;
  // Numbers with a name among them: every cell is a name.
  std::string mixed = test::write_file(test::temp_dir() + "/mixed.csv", "w,k\n1,2\n2,b\n");
  EXPECT_EQ(load_csv(options_for(mixed, "k"))->class_names(), (std::vector<std::string>{"2", "b"}));
  // Indices give no names; an empty class among names is an error.
  std::string indices = test::write_file(test::temp_dir() + "/idx.csv", "w,k\n1,0\n2,1\n");
  EXPECT_TRUE(load_csv(options_for(indices, "k"))->class_names().empty());
  std::string empty = test::write_file(test::temp_dir() + "/empty.csv", "w,k\n1,a\n2,\n");
  msg = config_error_of([&] { load_csv(options_for(empty, "k")); });
  EXPECT_TRUE(contains(msg, "line 3, column 2 ('k'): the class is empty")) << msg;
}

TEST(CsvDataset, UnknownColumnListsColumns) {
  std::string path = test::write_file(test::temp_dir() + "/t.csv", "alpha,beta,label\n1,2,0\n");
  std::string msg = config_error_of([&] { load_csv(options_for(path, "lable")); });
  EXPECT_TRUE(contains(msg, "target column 'lable'")) << msg;
  EXPECT_TRUE(contains(msg, "alpha, beta, label")) << msg;
  EXPECT_TRUE(contains(msg, "did you mean 'label'")) << msg;
  CsvOptions o = options_for(path, "label");
  o.features = {"gamma"};
  msg = config_error_of([&] { load_csv(o); });
  EXPECT_TRUE(contains(msg, "feature column 'gamma'")) << msg;
}

TEST(CsvDataset, HeaderlessMissingIndexSaysHowManyColumns) {
  // Issue 26: target '31' once drew "did you mean '1'?", a different column that does exist.
  std::string path = test::write_file(test::temp_dir() + "/t.csv", "1,2,0\n3,4,1\n");
  CsvOptions o = options_for(path, "31");
  o.header = false;
  std::string msg = config_error_of([&] { load_csv(o); });
  EXPECT_TRUE(contains(msg, "target column '31'")) << msg;
  EXPECT_FALSE(contains(msg, "did you mean")) << msg;
  EXPECT_TRUE(contains(msg, "3 columns: 0..2, or -1 for the last")) << msg;
  EXPECT_TRUE(contains(msg, "header: false")) << msg;
  // With a header, an index past the end also says how many columns there are.
  std::string named = test::write_file(test::temp_dir() + "/n.csv", "a,b,label\n1,2,0\n");
  msg = config_error_of([&] { load_csv(options_for(named, "7")); });
  EXPECT_TRUE(contains(msg, "a, b, label")) << msg;
  EXPECT_TRUE(contains(msg, "3 columns: 0..2")) << msg;
}

TEST(CsvDataset, MissingOrEmptyFileNamesThePath) {
  std::string dir = test::temp_dir();
  std::string msg = config_error_of([&] { load_csv(options_for(dir + "/nope.csv", "y")); });
  EXPECT_TRUE(contains(msg, dir + "/nope.csv")) << msg;
  EXPECT_TRUE(contains(msg, "does not exist")) << msg;
  EXPECT_FALSE(contains(msg, "current directory")) << msg;  // an absolute path says no more
  // A relative path says where it was looked for: the current directory, not the YAML's.
  msg = config_error_of([&] { load_csv(options_for("data/nope.csv", "y")); });
  EXPECT_TRUE(contains(msg, "'data/nope.csv' does not exist")) << msg;
  EXPECT_TRUE(
      contains(msg, "read from the current directory, " + std::filesystem::current_path().string()))
      << msg;
  std::string empty = test::write_file(dir + "/empty.csv", "\n\n");
  msg = config_error_of([&] { load_csv(options_for(empty, "y")); });
  EXPECT_TRUE(contains(msg, empty + "' is empty")) << msg;
  std::string header_only = test::write_file(dir + "/h.csv", "a,y\n");
  msg = config_error_of([&] { load_csv(options_for(header_only, "y")); });
  EXPECT_TRUE(contains(msg, "no data rows")) << msg;
}

TEST(CsvDataset, HeaderlessGzipWithSkippedRowsAndIndexTarget) {
  // Like scikit-learn's iris.csv: a special first line, no header, class in the last column.
  std::string text = "3,2,setosa,versicolor\n5.1,3.5,0\n4.9,3.0,1\n6.2,2.9,1\n";
  std::string path = test::write_file(test::temp_dir() + "/iris.csv.gz", test::gzip_stored(text));
  CsvOptions o = options_for(path, "-1");
  o.header = false;
  o.skip_rows = 1;
  DatasetPtr d = load_csv(o);
  ASSERT_EQ(d->size(), 3);
  Batch b = d->get_batch({0, 1, 2});
  EXPECT_TRUE(torch::equal(b.at("x"), torch::tensor({{5.1f, 3.5f}, {4.9f, 3.0f}, {6.2f, 2.9f}})));
  EXPECT_TRUE(torch::equal(b.at("y"), torch::tensor({0, 1, 1}, torch::kInt64)));
  o.target = "0";  // columns are named by index
  o.features = {"1"};
  o.target_type = "float";
  d = load_csv(o);
  EXPECT_FLOAT_EQ(d->get(2).at("y").item<float>(), 6.2f);
  EXPECT_FLOAT_EQ(d->get(2).at("x").item<float>(), 2.9f);
}

TEST(CsvDataset, ArgsFromConfig) {
  Config args =
      Config::from_string("{path: a.csv, target: '64', header: false}", "data.train.args");
  Config resolved =
      options_of<CsvOptions>().schema()->resolve(Config(args.node(), "data.train.args"));
  CsvOptions o = options_of<CsvOptions>().parse(resolved);
  EXPECT_EQ(o.target, "64");
  EXPECT_FALSE(o.header);
  EXPECT_EQ(o.delimiter, ",");
  EXPECT_EQ(o.target_type, "class");
  Config bad = Config::from_string("{path: a.csv, target: y, delimiter: '::'}");
  std::string msg = config_error_of(
      [&] { options_of<CsvOptions>().parse(Config(bad.node(), "data.train.args")); });
  EXPECT_TRUE(contains(msg, "data.train.args.delimiter must be one character")) << msg;
}

// scikit-learn's copies, when installed: the real files the examples use.
const char* kSklearnData = "/usr/lib/python3/dist-packages/sklearn/datasets/data";

TEST(CsvDataset, SklearnDigitsAndIris) {
  std::string digits = std::string(kSklearnData) + "/digits.csv.gz";
  std::string iris = std::string(kSklearnData) + "/iris.csv";
  ASSERT_TRUE(std::filesystem::exists(digits) && std::filesystem::exists(iris))
      << "scikit-learn's data files are missing: scripts/test installs python3-sklearn";
  CsvOptions o = options_for(digits, "64");
  o.header = false;
  DatasetPtr d = load_csv(o);
  EXPECT_EQ(d->size(), 1797);
  EXPECT_EQ(d->info().at("num_features"), 64);
  EXPECT_EQ(d->info().at("num_classes"), 10);
  EXPECT_EQ(d->get(0).at("y").item<int64_t>(), 0);
  o = options_for(iris, "-1");
  o.header = false;
  o.skip_rows = 1;
  d = load_csv(o);
  EXPECT_EQ(d->size(), 150);
  EXPECT_EQ(d->info().at("num_features"), 4);
  EXPECT_EQ(d->info().at("num_classes"), 3);
}

}  // namespace
}  // namespace unitrain
