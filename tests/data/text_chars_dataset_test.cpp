#include "unitrain/data/text_chars_dataset.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data_test_util.h"
#include "test_util.h"

namespace unitrain {
namespace {

using test::config_error_of;

TextCharsOptions text_options(const std::string& path, int64_t seq_len, int64_t stride = 0) {
  TextCharsOptions o;
  o.path = path;
  o.seq_len = seq_len;
  o.stride = stride;
  return o;
}

TEST(TextCharsDataset, WindowsShiftedByOne) {
  // 12 bytes; vocab = sorted distinct bytes "\n dehlorw" -> ids 0..7.
  std::string path = test::write_file(test::temp_dir() + "/t.txt", "hello world\n");
  TextCharsDataset d(text_options(path, 4));
  EXPECT_EQ(d.vocab(), std::string("\n dehlorw"));
  EXPECT_EQ(d.vocab_size(), 9);
  EXPECT_EQ(d.info().at("vocab_size"), 9);
  ASSERT_EQ(d.size(), 2);  // starts 0 and 4; start 8 would need 13 bytes
  Batch e = d.get(1);
  EXPECT_EQ(d.decode(e.at("x")), "o wo");
  EXPECT_EQ(d.decode(e.at("y")), " wor");
  EXPECT_EQ(e.at("x").scalar_type(), torch::kInt64);
  EXPECT_TRUE(torch::equal(e.at("x").slice(0, 1), e.at("y").slice(0, 0, 3)));
  // "hell" -> h=4 e=3 l=5 l=5
  EXPECT_TRUE(torch::equal(d.get(0).at("x"), torch::tensor({4, 3, 5, 5}, torch::kInt64)));

  Batch b = d.get_batch({1, 0});
  EXPECT_EQ(b.at("x").sizes(), (std::vector<int64_t>{2, 4}));
  EXPECT_TRUE(torch::equal(b.at("x")[0], e.at("x")));
  EXPECT_TRUE(torch::equal(b.at("y")[0], e.at("y")));
  EXPECT_TRUE(torch::equal(b.at("y")[1], d.get(0).at("y")));
}

TEST(TextCharsDataset, StrideAndGivenVocab) {
  std::string path = test::write_file(test::temp_dir() + "/t.txt", "abcabcab");
  TextCharsOptions o = text_options(path, 3, 1);
  o.vocab = "cba";
  TextCharsDataset d(o);
  EXPECT_EQ(d.size(), 5);  // starts 0..4, each needs 4 bytes
  EXPECT_TRUE(torch::equal(d.get(0).at("x"), torch::tensor({2, 1, 0}, torch::kInt64)));
  EXPECT_EQ(d.decode(d.get(4).at("y")), "cab");
}

TEST(TextCharsDataset, ErrorsNameTheFile) {
  std::string dir = test::temp_dir();
  std::string path = test::write_file(dir + "/t.txt", "ab\nxy");
  std::string msg = config_error_of([&] { TextCharsDataset{text_options(path, 5)}; });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("has 5 characters"), std::string::npos) << msg;
  TextCharsOptions o = text_options(path, 2);
  o.vocab = "ab\n";
  msg = config_error_of([&] { TextCharsDataset{o}; });
  EXPECT_NE(msg.find("line 2 (byte offset 3) has 'x'"), std::string::npos) << msg;
  msg = config_error_of([&] { TextCharsDataset{text_options(dir + "/none.txt", 2)}; });
  EXPECT_NE(msg.find(dir + "/none.txt' does not exist"), std::string::npos) << msg;
}

TEST(TextCharsDataset, ReadsGzip) {
  std::string path =
      test::write_file(test::temp_dir() + "/t.txt.gz", test::gzip_stored("hello world\n"));
  TextCharsDataset d(text_options(path, 4));
  EXPECT_EQ(d.vocab_size(), 9);
  EXPECT_EQ(d.decode(d.get(0).at("x")), "hell");
}

}  // namespace
}  // namespace unitrain
