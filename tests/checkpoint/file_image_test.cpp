// write_synced on its own: files of pieces of odd sizes, small (through the page cache) and
// large (direct writes through two staging buffers, one filled while the other is written, and
// a tail past the last whole block) come back byte for byte with the image's CRC; a failing
// write names the file.
#include "unitrain/checkpoint/file_image.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <numeric>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

/// Pieces of the given sizes, each byte a function of its place in the file.
FileImage image_of(const std::vector<size_t>& sizes) {
  auto bytes =
      std::make_shared<std::vector<char>>(std::accumulate(sizes.begin(), sizes.end(), size_t(0)));
  for (size_t i = 0; i < bytes->size(); ++i) (*bytes)[i] = char((i * 131 + i / 4093) & 0xff);
  FileImage image;
  size_t at = 0;
  for (size_t n : sizes) {
    image.pieces.push_back({bytes->data() + at, n});
    at += n;
  }
  image.keep = bytes;
  return image;
}

void expect_written(const std::vector<size_t>& sizes, const std::string& dir = test::temp_dir()) {
  const FileImage image = image_of(sizes);
  const std::string path = dir + "/file.pt";
  write_synced(path, image);
  EXPECT_EQ(read_file(path), image.bytes());
  EXPECT_EQ(crc32_of_file(path), crc32_of(image));
}

TEST(WriteSynced, ASmallFileComesBackWhole) { expect_written({100, 1, 4000, 17}); }

TEST(WriteSynced, ALargeFileOfOddPiecesComesBackWhole) {
  const size_t mb = size_t(1) << 20;
  // 3 staging buffers of 8 MiB and more: a piece across buffers, a buffer filled by many
  // pieces, and a tail that is no whole block.
  expect_written({1, 9 * mb + 3, 4093, 12 * mb + 5, 7, 5 * mb, 2 * mb + 511});
  expect_written({16 * mb});  // exactly two buffers, nothing after
}

TEST(WriteSynced, ALargeFileOnTmpfsComesBackWhole) {
  // tmpfs takes the buffered path (no disk to bypass; it accepts O_DIRECT since Linux 6.6).
  const std::string shm = "/dev/shm/unitrain-file-image-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(shm.c_str(), 0700), 0) << shm;
  const size_t mb = size_t(1) << 20;
  expect_written({3, 9 * mb + 3, 5}, shm);
  std::remove((shm + "/file.pt").c_str());
  ::rmdir(shm.c_str());
}

TEST(WriteSynced, AFailingWriteNamesTheFile) {
  // A device that is always full: the write fails (direct or not), and says where.
  for (size_t size : {size_t(5) << 20, size_t(20) << 20}) {  // one buffer; writes behind
    const std::string m = test::message_of([&] { write_synced("/dev/full", image_of({size})); });
    EXPECT_TRUE(test::contains(m, "writing /dev/full failed")) << m;
  }
  std::string m;
  m = test::message_of(
      [] { write_synced(test::temp_dir() + "/no/such/folder/x.pt", image_of({10})); });
  EXPECT_TRUE(test::contains(m, "cannot create")) << m;
  EXPECT_TRUE(test::contains(m, "no/such/folder/x.pt")) << m;
}

}  // namespace
}  // namespace unitrain
