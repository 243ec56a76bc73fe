// write_file_atomic on its own: the file is replaced whole, no temporary is left, and a folder
// that cannot be written is named.
#include "unitrain/core/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

TEST(AtomicFile, AWriteReplacesTheFileWhole) {
  namespace fs = std::filesystem;
  const std::string path = test::temp_dir() + "/config.yaml";
  write_file_atomic(path, "a: 1\n");
  write_file_atomic(path, "b: 2\n");
  std::ifstream in(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "b: 2\n");
  int files = 0;
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path())) files += !!e.exists();
  EXPECT_EQ(files, 1);  // no temporary left
  const std::string m = test::error_of<TrainError>(
      [] { write_file_atomic("/proc/unitrain-cannot-write/x.json", "{}"); });
  EXPECT_TRUE(test::contains(m, "/proc/unitrain-cannot-write/x.json.tmp")) << m;
}

}  // namespace
}  // namespace unitrain
