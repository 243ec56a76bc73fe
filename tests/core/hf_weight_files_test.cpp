#include "unitrain/core/hf_weight_files.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "test_util.h"

namespace unitrain {
namespace {

/// A safetensors file of F32 tensors named `names`, each [2], at `path`.
void write_tiny_safetensors(const std::string& path, const std::vector<std::string>& names) {
  std::string header = "{";
  for (size_t i = 0; i < names.size(); ++i) {
    header += (i ? "," : "") + std::string("\"") + names[i] +
              "\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [" +
              std::to_string(8 * i) + ", " + std::to_string(8 * i + 8) + "]}";
  }
  header += "}";
  const uint64_t n = header.size();
  test::write_file(path, std::string(reinterpret_cast<const char*>(&n), 8) + header +
                             std::string(8 * names.size(), '\0'));
}

/// A sharded folder: a.weight in shard 1, b.weight in shard 2, and `index` as its index.
std::string sharded_folder(const std::string& name, const std::string& index) {
  const std::string dir = test::temp_dir() + "/" + name;
  std::filesystem::remove_all(dir);
  write_tiny_safetensors(dir + "/one.safetensors", {"a.weight"});
  write_tiny_safetensors(dir + "/two.safetensors", {"b.weight"});
  test::write_file(dir + "/model.safetensors.index.json", index);
  return dir;
}

TEST(HfWeightFiles, ShardsAndTheirHeadersAreListedWithoutReadingATensor) {
  const std::string dir = sharded_folder(
      "listed",
      R"({"weight_map": {"b.weight": "two.safetensors", "a.weight": "one.safetensors"}})");
  EXPECT_TRUE(has_hf_weights(dir));
  const HfWeightFiles files = hf_weight_files(dir, "k");
  EXPECT_EQ(files.label(), "model.safetensors.index.json");
  ASSERT_EQ(files.files.size(), 2u);
  const auto headers = hf_weight_headers(files, "k");
  ASSERT_EQ(headers.size(), 2u);
  EXPECT_EQ(headers[0].file, "one.safetensors");
  EXPECT_EQ(headers[0].name, "a.weight");
  EXPECT_EQ(headers[1].shape, std::vector<int64_t>{2});
}

TEST(HfWeightFiles, ABadIndexIsRefusedNamingItInOneShortLine) {
  struct Case {
    std::string index, expected;
  };
  const std::vector<Case> cases = {
      {R"({"weight_map": {"a.weight": "three.safetensors"}})",
       "three.safetensors' is missing (model.safetensors.index.json names it for 1 tensors"},
      {R"({"weight_map": {"a.weight": "../one.safetensors"}})", "not a file in the index's folder"},
      {R"({"weight_map": {"a.weight": 5}})", "maps a.weight to 5, not a file name"},
      {R"({"weight_map": {}})", "its weight_map names no tensor"},
      {R"({"metadata": {}})", "has no weight_map object"},
      {R"({"weight_map": {"a.weight": "one.safe)",
       "model.safetensors.index.json' is not JSON: "
       "parse error"},
      {R"({"weight_map": {"c.weight": "one.safetensors"}})",
       "one.safetensors' does not hold c.weight (model.safetensors.index.json says it does)"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string dir = sharded_folder("bad" + std::to_string(i++), c.index);
    const std::string e =
        test::config_error_of([&] { hf_weight_headers(hf_weight_files(dir, "k"), "k"); });
    EXPECT_TRUE(test::contains(e, c.expected)) << c.index << "\n" << e;
    EXPECT_FALSE(test::contains(e, "json.exception")) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  const std::string empty = test::temp_dir() + "/no_weights";
  std::filesystem::create_directories(empty);
  EXPECT_FALSE(has_hf_weights(empty));
  EXPECT_TRUE(test::contains(test::config_error_of([&] { hf_weight_files(empty, "k"); }),
                             "holds no weights"));
}

}  // namespace
}  // namespace unitrain
