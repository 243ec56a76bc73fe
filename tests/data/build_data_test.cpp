#include "unitrain/data/build_data.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data_test_util.h"
#include "test_util.h"
#include "unitrain/data/dataset.h"
#include "unitrain/data/loader.h"
#include "unitrain/data/text_chars_dataset.h"

namespace unitrain {
namespace {

Config data_section(const std::string& yaml) {
  return Config(Config::from_string(yaml).node(), "data");
}

TEST(BuildData, SyntheticTrainWithValidationSplit) {
  register_builtin_datasets();
  DataSplits s = build_data(data_section(R"(
train: {type: synthetic, args: {n: 100, features: 4, classes: 3}}
validation_ratio: 0.25
)"),
                            7);
  ASSERT_TRUE(s.train && s.val);
  EXPECT_EQ(s.train->size(), 75);
  EXPECT_EQ(s.val->size(), 25);
  EXPECT_FALSE(s.test);
  EXPECT_EQ(s.train->info().at("num_classes"), 3);
  DataSplits again = build_data(data_section(R"(
train: {type: synthetic, args: {n: 100, features: 4, classes: 3}}
validation_ratio: 0.25
)"),
                                7);
  EXPECT_TRUE(torch::equal(s.val->get(3).at("x"), again.val->get(3).at("x")));
}

TEST(BuildData, ValAndTestDatasetsAndNoSplitByDefault) {
  DataSplits s = build_data(data_section(R"(
train: {type: synthetic, args: {n: 30}}
val: {type: synthetic, args: {n: 10, seed: 1}}
test: {type: synthetic, args: {n: 5, seed: 2}}
)"),
                            0);
  EXPECT_EQ(s.train->size(), 30);
  EXPECT_EQ(s.val->size(), 10);
  EXPECT_EQ(s.test->size(), 5);
}

TEST(BuildData, ValAndTestCsvsTakeTheTrainingClassNames) {
  const std::string dir = test::temp_dir();
  test::write_file(dir + "/train.csv", "w,k\n1,dog\n2,cat\n3,owl\n");
  test::write_file(dir + "/val.csv", "w,k\n1,owl\n");  // one class: still index 2
  test::write_file(dir + "/test.csv", "w,k\n1,cow\n");
  const std::string yaml = "train: {type: csv, args: {path: " + dir + "/train.csv, target: k}}\n" +
                           "val: {type: csv, args: {path: " + dir + "/val.csv, target: k}}\n";
  DataSplits s = build_data(data_section(yaml), 0);
  EXPECT_EQ(s.val->class_names(), (std::vector<std::string>{"cat", "dog", "owl"}));
  EXPECT_EQ(s.val->get(0).at("y").item<int64_t>(), 2);
  const std::string msg = test::config_error_of([&] {
    build_data(
        data_section(yaml + "test: {type: csv, args: {path: " + dir + "/test.csv, target: k}}\n"),
        0);
  });
  EXPECT_NE(msg.find("data.test: csv: '" + dir +
                     "/test.csv' line 2, column 2 ('k'): class 'cow' "
                     "is not one of the 3 classes (cat, dog, owl)"),
            std::string::npos)
      << msg;
}

TEST(BuildData, NormalizeUsesTrainStatisticsForEverySplit) {
  DataSplits s = build_data(data_section(R"(
train: {type: synthetic, args: {n: 400, shape: [2, 3, 3]}}
test: {type: synthetic, args: {n: 50, shape: [2, 3, 3], seed: 5}}
validation_ratio: 0.5
normalize: {enabled: true}
)"),
                            3);
  std::vector<int64_t> all(200);
  for (int64_t i = 0; i < 200; ++i) all[static_cast<size_t>(i)] = i;
  torch::Tensor x = s.train->get_batch(all).at("x").transpose(0, 1).reshape({2, -1});
  EXPECT_TRUE(torch::allclose(x.mean(1), torch::zeros({2}), 0, 1e-4));
  EXPECT_TRUE(torch::allclose(x.std(1, /*unbiased=*/false), torch::ones({2}), 0, 1e-4));
  // val is normalized with the train statistics, so not exactly 0/1 but close.
  torch::Tensor v = s.val->get_batch(all).at("x").transpose(0, 1).reshape({2, -1});
  EXPECT_FALSE(torch::allclose(v.mean(1), torch::zeros({2}), 0, 1e-4));
  EXPECT_TRUE(torch::allclose(v.mean(1), torch::zeros({2}), 0, 0.2));
  ASSERT_TRUE(s.test);

  s = build_data(data_section(R"(
train: {type: synthetic, args: {n: 10, features: 2}}
normalize: {enabled: true, mean: [1.0, 2.0], std: [0.5, 4.0]}
)"),
                 3);
  DataSplits raw =
      build_data(data_section("train: {type: synthetic, args: {n: 10, features: 2}}"), 3);
  torch::Tensor expected =
      (raw.train->get(4).at("x") - torch::tensor({1.0f, 2.0f})) / torch::tensor({0.5f, 4.0f});
  EXPECT_TRUE(torch::allclose(s.train->get(4).at("x"), expected));
}

TEST(BuildData, ConfigErrors) {
  std::string msg = test::config_error_of([] { build_data(data_section("val: null"), 0); });
  EXPECT_NE(msg.find("missing key data.train"), std::string::npos) << msg;
  msg = test::config_error_of([] { build_data(data_section("train: {type: synthetc}"), 0); });
  EXPECT_NE(msg.find("did you mean 'synthetic'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("csv, hdf5, idx, image_folder, instruct, npy, npz, synthetic, text, "
                     "text_chars"),
            std::string::npos)
      << msg;
  msg = test::config_error_of([] {
    build_data(data_section(R"(
train: {type: synthetic}
val: {type: synthetic}
validation_ratio: 0.1
)"),
               0);
  });
  EXPECT_NE(msg.find("data.val and data.validation_ratio are both set"), std::string::npos) << msg;
  msg = test::config_error_of(
      [] { build_data(data_section("{train: {type: synthetic}, validation_ratio: 1.0}"), 0); });
  EXPECT_NE(msg.find("data.validation_ratio must be [0, 1), got 1.0"), std::string::npos) << msg;
  msg = test::config_error_of([] {
    build_data(data_section("{train: {type: csv, args: {path: /no/such.csv, target: y}}}"), 0);
  });
  EXPECT_NE(msg.find("data.train: csv: file '/no/such.csv' does not exist"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("/no/such.csv"), std::string::npos) << msg;
  msg = test::config_error_of(
      [] { build_data(data_section("{train: {type: csv, args: {path: a.csv}}}"), 0); });
  EXPECT_NE(msg.find("missing required key data.train.args.target"), std::string::npos) << msg;
}

TEST(BuildData, TextCharsFromConfigExposesVocab) {
  std::string path = test::write_file(test::temp_dir() + "/t.txt", "to be or not to be\n");
  DataSplits s = build_data(
      data_section("train: {type: text_chars, args: {path: '" + path + "', seq_len: 5}}"), 0);
  EXPECT_EQ(s.train->info().at("vocab_size"), 8);
  auto text = std::dynamic_pointer_cast<const TextCharsDataset>(s.train);
  ASSERT_TRUE(text);
  EXPECT_EQ(text->vocab(), "\n benort");
}

TEST(BuildData, SchemaDefaultsAndLoaderOptions) {
  Config resolved = data_section_schema()->resolve(data_section("train: {type: synthetic}"));
  EXPECT_FALSE(resolved.has("val"));
  EXPECT_DOUBLE_EQ(resolved.get_double("validation_ratio"), 0.0);
  EXPECT_FALSE(resolved.at("normalize").get_bool("enabled"));
  EXPECT_EQ(resolved.at("normalize").get_string("key"), "x");
  LoaderOptions o = LoaderOptions::from_config(resolved.at("loader"));
  EXPECT_EQ(o.batch_size_, 32);
  EXPECT_EQ(o.workers_, -1);  // auto
  EXPECT_TRUE(o.shuffle_);
  EXPECT_FALSE(o.drop_last_);
  EXPECT_EQ(o.prefetch_, 4);
  std::string msg = test::config_error_of([] {
    data_section_schema()->resolve(
        data_section("{train: {type: synthetic}, loader: {batch_size: 0}}"));
  });
  EXPECT_NE(msg.find("data.loader.batch_size must be > 0"), std::string::npos) << msg;
}

}  // namespace
}  // namespace unitrain
