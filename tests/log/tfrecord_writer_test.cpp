#include "unitrain/log/tfrecord_writer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(TfRecordWriter, WritesFramedRecordsInOrder) {
  const std::string path = test::temp_dir() + "/events.out.tfevents.test";
  {
    TfRecordWriter w(path);
    w.write("first");
    w.write(std::string(3, '\0'));
    w.write("");
    // Each record is in the file as soon as write() returns.
    EXPECT_EQ(read_bytes(path).size(), (16u + 5) + (16 + 3) + 16);
  }
  EXPECT_EQ(read_bytes(path),
            tfrecord_frame("first") + tfrecord_frame(std::string(3, '\0')) + tfrecord_frame(""));
}

TEST(TfRecordWriter, NeverOverwritesAFile) {
  const std::string path = test::write_file(test::temp_dir() + "/existing", "keep me");
  const std::string message = test::error_of<TrainError>([&] { TfRecordWriter w(path); });
  EXPECT_TRUE(test::contains(message, path)) << message;
  EXPECT_EQ(read_bytes(path), "keep me");
}

TEST(TfRecordWriter, MissingFolderNamesThePath) {
  const std::string path = test::temp_dir() + "/no/such/folder/events";
  EXPECT_TRUE(test::contains(test::error_of<TrainError>([&] { TfRecordWriter w(path); }), path));
}

TEST(TfRecordFrame, LayoutIsLengthCrcDataCrc) {
  const std::string f = tfrecord_frame("abc");
  ASSERT_EQ(f.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(static_cast<unsigned char>(f[0]), 3);  // little-endian uint64 length
  for (int i = 1; i < 8; ++i) EXPECT_EQ(f[i], '\0');
  EXPECT_EQ(f.substr(12, 3), "abc");
}

}  // namespace
}  // namespace unitrain
