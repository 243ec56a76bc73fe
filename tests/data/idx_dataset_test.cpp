#include "unitrain/data/idx_dataset.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "data_test_util.h"
#include "test_util.h"

namespace unitrain {
namespace {

using test::config_error_of;

std::string be32(uint32_t v) {
  std::string s;
  for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return s;
}

// An IDX file of unsigned bytes with the given dims, data = 0, 1, 2, ... (mod 256).
std::string idx_bytes(const std::vector<uint32_t>& dims, const std::string& data) {
  std::string out = be32(0x0800u | static_cast<uint32_t>(dims.size()));
  for (uint32_t d : dims) out += be32(d);
  return out + data;
}

struct IdxFiles {
  std::string images, labels;
};

// Three 2x3 images with pixels 10*i + p, labels 2, 0, 1.
IdxFiles write_idx(const std::string& dir, bool gzip) {
  std::string pixels;
  for (int i = 0; i < 3; ++i) {
    for (int p = 0; p < 6; ++p) pixels.push_back(static_cast<char>(10 * i + p));
  }
  std::string images = idx_bytes({3, 2, 3}, pixels);
  std::string labels = idx_bytes({3}, std::string("\x02\x00\x01", 3));
  if (gzip) {
    images = test::gzip_stored(images);
    labels = test::gzip_stored(labels);
  }
  std::string ext = gzip ? ".gz" : "";
  return {test::write_file(dir + "/images-idx3-ubyte" + ext, images),
          test::write_file(dir + "/labels-idx1-ubyte" + ext, labels)};
}

void expect_three_images(const IdxDataset& d) {
  ASSERT_EQ(d.size(), 3);
  Batch e = d.get(1);
  EXPECT_EQ(e.at("x").sizes(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(e.at("x").scalar_type(), torch::kFloat32);
  torch::Tensor expected = torch::arange(10, 16, torch::kFloat32).view({1, 2, 3}) / 255.0;
  EXPECT_TRUE(torch::allclose(e.at("x"), expected));
  EXPECT_EQ(e.at("y").item<int64_t>(), 0);
  Batch b = d.get_batch({2, 1});
  EXPECT_EQ(b.at("x").sizes(), (std::vector<int64_t>{2, 1, 2, 3}));
  EXPECT_TRUE(torch::allclose(b.at("x")[1], expected));
  EXPECT_TRUE(torch::equal(b.at("y"), torch::tensor({1, 0}, torch::kInt64)));
  EXPECT_EQ(d.info().at("num_classes"), 3);
}

TEST(IdxDataset, ReadsPlainAndGzipFiles) {
  std::string dir = test::temp_dir();
  IdxFiles plain = write_idx(dir, false);
  expect_three_images(IdxDataset({plain.images, plain.labels}));
  IdxFiles gz = write_idx(dir, true);
  expect_three_images(IdxDataset({gz.images, gz.labels}));
}

TEST(IdxDataset, SwappedFilesNameTheFileAndMagic) {
  IdxFiles f = write_idx(test::temp_dir(), false);
  std::string msg = config_error_of([&] { IdxDataset({f.labels, f.images}); });
  EXPECT_NE(msg.find(f.labels), std::string::npos) << msg;
  EXPECT_NE(msg.find("magic 0x00000801, expected 0x00000803"), std::string::npos) << msg;
  EXPECT_NE(msg.find("swapped"), std::string::npos) << msg;
}

TEST(IdxDataset, CountMismatchTruncationAndMissingFile) {
  std::string dir = test::temp_dir();
  IdxFiles f = write_idx(dir, false);
  std::string two_labels = test::write_file(dir + "/two", idx_bytes({2}, std::string(2, '\0')));
  std::string msg = config_error_of([&] { IdxDataset({f.images, two_labels}); });
  EXPECT_NE(msg.find("3 images"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 labels"), std::string::npos) << msg;

  std::string short_images =
      test::write_file(dir + "/short", idx_bytes({3, 2, 3}, std::string(17, '\0')));
  msg = config_error_of([&] { IdxDataset({short_images, f.labels}); });
  EXPECT_NE(msg.find(short_images), std::string::npos) << msg;
  EXPECT_NE(msg.find("should hold 18 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;

  msg = config_error_of([&] { IdxDataset({dir + "/missing", f.labels}); });
  EXPECT_NE(msg.find(dir + "/missing' does not exist"), std::string::npos) << msg;
}

TEST(IdxDataset, FashionMnistWhenInstalled) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  ASSERT_TRUE(std::filesystem::exists(dir + "/t10k-images-idx3-ubyte.gz"))
      << "Fashion-MNIST is missing: scripts/test installs dataset-fashion-mnist";
  IdxDataset d({dir + "/t10k-images-idx3-ubyte.gz", dir + "/t10k-labels-idx1-ubyte.gz"});
  EXPECT_EQ(d.size(), 10000);
  Batch b = d.get_batch({0, 1, 2});
  EXPECT_EQ(b.at("x").sizes(), (std::vector<int64_t>{3, 1, 28, 28}));
  EXPECT_LE(b.at("x").max().item<float>(), 1.0f);
  EXPECT_GT(b.at("x").max().item<float>(), 0.5f);
  EXPECT_EQ(d.info().at("num_classes"), 10);
  EXPECT_EQ(b.at("y")[0].item<int64_t>(), 9);  // t10k's first item is an ankle boot
}

}  // namespace
}  // namespace unitrain
