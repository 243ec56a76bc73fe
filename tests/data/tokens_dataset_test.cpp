// The tokens dataset on files written as nanoGPT writes them: numpy's tofile of uint16/uint32.
#include "unitrain/data/tokens_dataset.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace unitrain {
namespace {

using test::config_error_of;

/// `np.array(ids, dtype=dtype).tofile(path)` run by Debian's python3-numpy; a test failure
/// (never a skip) when it cannot run.
std::string numpy_tokens(const std::string& name, const std::string& ids, const std::string& dtype,
                         const std::string& dir = test::temp_dir()) {
  const std::string path = dir + "/" + name;
  const std::string cmd = "/usr/bin/python3 -c 'import numpy as np; np.array(" + ids +
                          ", dtype=np." + dtype + ").tofile(\"" + path + "\")'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << " (python3-numpy: scripts/lib.sh installs it)";
  return path;
}

TokensOptions tokens_options(const std::string& path, int64_t seq_len,
                             const std::string& dtype = "uint16", int64_t stride = 0) {
  TokensOptions o;
  o.path = path;
  o.seq_len = seq_len;
  o.dtype = dtype;
  o.stride = stride;
  return o;
}

TEST(TokensDataset, WindowsOfANumpyUint16FileShiftedByOne) {
  // 11 ids: windows of 4 start at 0 and 4 (a third would need ids up to 12).
  const std::string path =
      numpy_tokens("train.bin", "[5, 1, 60000, 7, 2, 9, 3, 3, 8, 0, 4]", "uint16");
  TokensDataset d(tokens_options(path, 4));
  ASSERT_EQ(d.size(), 2);
  EXPECT_EQ(d.info().at("num_tokens"), 11);
  EXPECT_EQ(d.info().at("vocab_size"), 60001);  // the largest id + 1
  Batch e = d.get(1);
  EXPECT_TRUE(torch::equal(e.at("x"), torch::tensor({2, 9, 3, 3}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(e.at("y"), torch::tensor({9, 3, 3, 8}, torch::kInt64)));
  Batch b = d.get_batch({1, 0});
  EXPECT_EQ(b.at("x").sizes(), (std::vector<int64_t>{2, 4}));
  EXPECT_TRUE(torch::equal(b.at("x")[1], torch::tensor({5, 1, 60000, 7}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(b.at("y")[1], torch::tensor({1, 60000, 7, 2}, torch::kInt64)));
  // Overlapping windows with a stride.
  EXPECT_EQ(TokensDataset(tokens_options(path, 4, "uint16", 1)).size(), 7);
}

TEST(TokensDataset, Uint32IdsAboveSixtyFiveThousand) {
  const std::string path = numpy_tokens("big.bin", "[100000, 3, 70000, 1, 2]", "uint32");
  TokensOptions o = tokens_options(path, 2, "uint32");
  o.vocab_size = 200000;
  TokensDataset d(o);
  EXPECT_EQ(d.info().at("vocab_size"), 200000);
  EXPECT_TRUE(torch::equal(d.get(0).at("x"), torch::tensor({100000, 3}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(d.get(1).at("y"), torch::tensor({1, 2}, torch::kInt64)));
}

TEST(TokensDataset, BadFilesAreNamed) {
  const std::string dir = test::temp_dir();
  EXPECT_TRUE(
      test::contains(config_error_of([&] { TokensDataset(tokens_options(dir + "/none.bin", 4)); }),
                     "tokens: file '" + dir + "/none.bin' does not exist"));
  const std::string odd = test::write_file(dir + "/odd.bin", "abcde");  // 5 bytes: 2.5 uint16
  EXPECT_TRUE(test::contains(config_error_of([&] { TokensDataset(tokens_options(odd, 1)); }),
                             "has 5 bytes, not a whole number of uint16 ids"));
  const std::string small = numpy_tokens("small.bin", "[1, 2, 3]", "uint16");
  EXPECT_TRUE(test::contains(config_error_of([&] { TokensDataset(tokens_options(small, 3)); }),
                             "holds 3 ids; one example needs seq_len + 1 = 4"));
  // A declared vocab_size is checked as windows are read, naming the file and the offset.
  TokensOptions o = tokens_options(small, 2);
  o.vocab_size = 3;
  TokensDataset declared(o);
  EXPECT_TRUE(test::contains(config_error_of([&] { declared.get(0); }),
                             "tokens: '" + small +
                                 "' holds id 3 at token 2 (byte 4), not below "
                                 "vocab_size 3"));
  const std::string empty = test::write_file(dir + "/empty.bin", "");
  EXPECT_TRUE(test::contains(config_error_of([&] { TokensDataset(tokens_options(empty, 1)); }),
                             "holds 0 ids"));
}

TEST(TokensDataset, ShardsByListOrGlobAreOneDatasetOfEachFilesWindows) {
  const std::string dir = test::temp_dir();
  // 7 ids: one window of 4 (+1) each; 10 ids: two. Windows never cross from one file to the next.
  const std::string a = numpy_tokens("train_000.bin", "[1, 2, 3, 4, 5, 6, 7]", "uint16", dir);
  const std::string b =
      numpy_tokens("train_001.bin", "[10, 11, 12, 13, 14, 15, 16, 17, 18, 19]", "uint16", dir);
  TokensOptions listed = tokens_options("", 4);
  listed.paths = {a, b};
  TokensDataset d(listed);
  ASSERT_EQ(d.size(), 3);
  EXPECT_EQ(d.info().at("num_tokens"), 17);
  EXPECT_EQ(d.info().at("vocab_size"), 20);
  EXPECT_TRUE(torch::equal(d.get(0).at("x"), torch::tensor({1, 2, 3, 4}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(d.get(1).at("x"), torch::tensor({10, 11, 12, 13}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(d.get(2).at("y"), torch::tensor({15, 16, 17, 18}, torch::kInt64)));
  // A glob: the same files sorted by name, the same examples.
  TokensDataset globbed(tokens_options(dir + "/train_*.bin", 4));
  ASSERT_EQ(globbed.size(), 3);
  EXPECT_TRUE(torch::equal(globbed.get_batch({2, 0}).at("x"), d.get_batch({2, 0}).at("x")));
  // Errors: a glob matching nothing, both keys, a missing file, a file of another dtype.
  EXPECT_TRUE(
      test::contains(config_error_of([&] { TokensDataset(tokens_options(dir + "/v*.bin", 4)); }),
                     "tokens: path '" + dir + "/v*.bin' matches no file"));
  TokensOptions both = tokens_options(a, 4);
  both.paths = {b};
  EXPECT_TRUE(test::contains(config_error_of([&] { TokensDataset{both}; }), "not both"));
  listed.paths = {a, dir + "/gone.bin"};
  EXPECT_TRUE(test::contains(config_error_of([&] { TokensDataset{listed}; }),
                             "'" + dir + "/gone.bin' does not exist"));
  const std::string wide = numpy_tokens("wide.bin", "[1, 2, 3, 4, 5]", "uint32", dir);
  const std::string odd = test::write_file(dir + "/odd.bin", std::string(21, '\0'));
  listed.paths = {wide, odd};
  listed.dtype = "uint32";
  EXPECT_TRUE(test::contains(config_error_of([&] { TokensDataset{listed}; }),
                             "has 21 bytes, not a whole number of uint32 ids"));
}

TEST(TokensDataset, FilesOverTheScanLimitNeedAVocabSizeAndAreNotRead) {
  // A sparse file of 4 GiB: no disk, and built instantly because nothing reads it.
  const std::string path = test::temp_dir() + "/sparse.bin";
  std::filesystem::resize_file(test::write_file(path, ""), uintmax_t(4) << 30);
  EXPECT_TRUE(test::contains(config_error_of([&] { TokensDataset(tokens_options(path, 8)); }),
                             "data.*.args.vocab_size is not set"));
  TokensOptions o = tokens_options(path, 8);
  o.vocab_size = 50257;
  TokensDataset d(o);
  EXPECT_EQ(d.size(), ((int64_t(2) << 30) - 1 - 8) / 8 + 1);
  EXPECT_EQ(d.info().at("vocab_size"), 50257);
  EXPECT_TRUE(torch::equal(d.get(d.size() - 1).at("x"), torch::zeros({8}, torch::kInt64)));
}

}  // namespace
}  // namespace unitrain
