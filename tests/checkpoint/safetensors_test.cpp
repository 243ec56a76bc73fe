#include "unitrain/checkpoint/safetensors.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "test_util.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/safetensors_header.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A safetensors file written by hand: the 8-byte length (`length`, or the header's own), the
/// header, the data.
std::string raw_safetensors(const std::string& name, const std::string& header,
                            const std::string& data = "", int64_t length = -1) {
  const uint64_t n = length < 0 ? header.size() : uint64_t(length);
  std::string bytes(reinterpret_cast<const char*>(&n), 8);
  return test::write_file(test::temp_dir() + "/" + name, bytes + header + data);
}

/// The bytes of `t` as a string (a little-endian machine's are the file's).
std::string bytes_of(const torch::Tensor& t) {
  return std::string(static_cast<const char*>(t.data_ptr()), t.nbytes());
}

NamedTensors every_dtype() {
  torch::manual_seed(7);
  NamedTensors t;
  t.emplace_back("f64", torch::randn({2, 3}, torch::kFloat64));
  t.emplace_back("f32", torch::randn({4}));
  t.emplace_back("f16", torch::randn({3, 1}).to(torch::kFloat16));
  t.emplace_back("bf16", torch::tensor({1.5f, -2.25f, 3e38f, 1e-3f}).to(torch::kBFloat16));
  t.emplace_back("i64", torch::tensor({int64_t(1) << 62, int64_t(-5)}, torch::kInt64));
  t.emplace_back("i32", torch::tensor({-7, 1 << 30}, torch::kInt32));
  t.emplace_back("i16", torch::tensor({-300, 300}, torch::kInt16));
  t.emplace_back("i8", torch::tensor({-128, 127}, torch::kInt8));
  t.emplace_back("u8", torch::tensor({0, 255}, torch::kUInt8));
  t.emplace_back("bool", torch::tensor({true, false, true}));
  t.emplace_back("scalar", torch::tensor(2.5, torch::kFloat32));  // 0-d
  t.emplace_back("empty", torch::zeros({0, 3}));
  return t;
}

TEST(Safetensors, RoundTripsEveryDtypeBitForBit) {
  const std::string path = test::temp_dir() + "/all.safetensors";
  const NamedTensors given = every_dtype();
  write_safetensors(path, given);
  const SafetensorsContent read = read_safetensors(path, "test");
  ASSERT_EQ(read.tensors.size(), given.size());
  EXPECT_TRUE(read.metadata.empty());
  std::map<std::string, torch::Tensor> by_name(read.tensors.begin(), read.tensors.end());
  for (const auto& [name, t] : given) {
    ASSERT_TRUE(by_name.count(name)) << name;
    const torch::Tensor& got = by_name[name];
    EXPECT_EQ(got.scalar_type(), t.scalar_type()) << name;
    EXPECT_EQ(got.sizes(), t.sizes()) << name;
    EXPECT_EQ(bytes_of(got), bytes_of(t)) << name;
  }
  EXPECT_EQ(by_name["scalar"].dim(), 0);
  EXPECT_EQ(by_name["bf16"].to(torch::kFloat32)[0].item<float>(), 1.5f);
  EXPECT_EQ(by_name["bf16"].to(torch::kFloat32)[1].item<float>(), -2.25f);
}

TEST(Safetensors, WritesSortedKeysPaddedHeaderAndContiguousData) {
  const std::string path = test::temp_dir() + "/small.safetensors";
  NamedTensors given;
  given.emplace_back("b", torch::tensor({1, 2}, torch::kInt8));
  given.emplace_back("a", torch::tensor(7, torch::kUInt8));
  // A transposed view: written as its values in row-major order.
  given.emplace_back("c", torch::tensor({{1, 2}, {3, 4}}, torch::kInt16).t());
  write_safetensors(path, given, {{"format", "pt"}});
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"data_offsets":[0,1],"dtype":"U8","shape":[]},)"
      R"("b":{"data_offsets":[1,3],"dtype":"I8","shape":[2]},)"
      R"("c":{"data_offsets":[3,11],"dtype":"I16","shape":[2,2]}})";
  const std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
  const uint64_t n = padded.size();
  std::string expected(reinterpret_cast<const char*>(&n), 8);
  expected += padded;
  expected += std::string("\x07\x01\x02", 3);
  for (int16_t v : {1, 3, 2, 4}) expected.append(reinterpret_cast<const char*>(&v), 2);
  EXPECT_EQ(file_text(path), expected);
  EXPECT_EQ(n % 8, 0u);
}

TEST(Safetensors, AFileWithNoTensors) {
  const std::string path = test::temp_dir() + "/none.safetensors";
  write_safetensors(path, {});
  EXPECT_EQ(file_text(path), std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  const SafetensorsContent read = read_safetensors(path, "test");
  EXPECT_TRUE(read.tensors.empty());
  EXPECT_TRUE(read.metadata.empty());
}

TEST(Safetensors, MetadataRoundTrips) {
  const std::string path = test::temp_dir() + "/meta.safetensors";
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"note", "é \"quoted\""}};
  write_safetensors(path, {{"w", torch::ones({2})}}, meta);
  EXPECT_EQ(read_safetensors(path, "test").metadata, meta);
}

TEST(Safetensors, ReadsAHandWrittenFileInOffsetOrder) {
  // Keys out of order, data in another order, spaces before and after the JSON's parts.
  const float w[2] = {1.0f, -1.0f};
  const int64_t ids[1] = {42};
  std::string data(reinterpret_cast<const char*>(ids), 8);
  data.append(reinterpret_cast<const char*>(w), 8);
  const std::string path =
      raw_safetensors("hand.bin",
                      R"({ "z.w" : {"shape": [2], "dtype": "F32", "data_offsets": [8, 16]}, )"
                      R"("a.ids": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}, )"
                      R"("__metadata__": {"k": "v"}}    )",
                      data);
  const SafetensorsContent read = read_safetensors(path, "test");
  ASSERT_EQ(read.tensors.size(), 2u);
  EXPECT_EQ(read.tensors[0].first, "a.ids");
  EXPECT_EQ(read.tensors[0].second.item<int64_t>(), 42);
  EXPECT_EQ(read.tensors[1].first, "z.w");
  EXPECT_TRUE(torch::equal(read.tensors[1].second, torch::tensor({1.0f, -1.0f})));
  EXPECT_EQ(read.metadata.at("k"), "v");
  EXPECT_TRUE(is_safetensors(path));  // by its bytes: the name says nothing
}

TEST(Safetensors, RecognisesFilesByNameOrBytes) {
  const std::string dir = test::temp_dir();
  EXPECT_TRUE(is_safetensors(dir + "/missing.safetensors"));  // the reader says it is missing
  EXPECT_FALSE(is_safetensors(dir + "/missing.pt"));
  write_safetensors(dir + "/weights.st", {{"w", torch::ones({1})}});
  EXPECT_TRUE(is_safetensors(dir + "/weights.st"));
  const std::vector<char> torch_file = save_tensor_dict({{"w", torch::ones({1})}});
  test::write_file(dir + "/weights.pt", std::string(torch_file.begin(), torch_file.end()));
  EXPECT_FALSE(is_safetensors(dir + "/weights.pt"));
  test::write_file(dir + "/short", "abc");
  EXPECT_FALSE(is_safetensors(dir + "/short"));
}

/// The ConfigError reading `path` gives; checks that it names the key and the file.
std::string read_error(const std::string& path) {
  const std::string m =
      test::error_of<ConfigError>([&] { read_safetensors(path, "model.init_from"); });
  EXPECT_TRUE(test::contains(m, "model.init_from: '" + path + "'")) << m;
  return m;
}

const std::string kF32x2 = R"("dtype": "F32", "shape": [2])";
const std::string kEight(8, '\0');

TEST(Safetensors, RejectsMissingShortAndTruncatedFiles) {
  const std::string dir = test::temp_dir();
  EXPECT_TRUE(
      test::contains(test::error_of<ConfigError>(
                         [&] { read_safetensors(dir + "/nope.safetensors", "model.init_from"); }),
                     "model.init_from: file '" + dir + "/nope.safetensors' does not exist"));
  const std::string tiny = test::write_file(dir + "/tiny.safetensors", "abc");
  EXPECT_TRUE(test::contains(read_error(tiny), "3 bytes, less than the 8-byte header length"));
  const std::string header = "{\"w\": {" + kF32x2 + ", \"data_offsets\": [0, 8]}}";
  EXPECT_TRUE(test::contains(
      read_error(raw_safetensors("long.st", header, kEight, 4096)),
      "header length says 4096 bytes, but only " + std::to_string(header.size() + 8) + " follow"));
  const std::string cut = read_error(raw_safetensors("cut.st", header, kEight.substr(0, 5)));
  EXPECT_TRUE(test::contains(cut,
                             "tensor 'w': its bytes [0, 8) run past the end of the file, "
                             "which holds 5 bytes"))
      << cut;
}

TEST(Safetensors, RejectsHeadersThatAreNotTheFormat) {
  struct Case {
    std::string header, data, expected;
  };
  const std::vector<Case> cases = {
      {"{\"w\": [1, 2", "", "is not JSON"},
      {"[1, 2]", "", "JSON but not an object of tensors"},
      {R"({"w": 3})", "", "tensor 'w': expected {\"dtype\""},
      {R"({"w": {"shape": [2], "data_offsets": [0, 8]}})", kEight, "tensor 'w': no \"dtype\""},
      {R"({"w": {"dtype": "F32", "data_offsets": [0, 8]}})", kEight, "tensor 'w': no \"shape\""},
      {"{\"w\": {" + kF32x2 + "}}", kEight, "tensor 'w': no \"data_offsets\""},
      {R"({"w": {"dtype": 1, "shape": [2], "data_offsets": [0, 8]}})", kEight,
       "tensor 'w': dtype must be a string, got 1"},
      {R"({"w": {"dtype": "C64", "shape": [2], "data_offsets": [0, 8]}})", kEight,
       "tensor 'w': unknown dtype \"C64\" (known: F64, F32, F16, BF16, I64, I32, I16, I8, U8, "
       "BOOL)"},
      {R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", kEight,
       "tensor 'w': shape must hold sizes >= 0, got [-2]"},
      {R"({"w": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]}})", kEight,
       "tensor 'w': shape must hold sizes >= 0"},
      {R"({"w": {"dtype": "F32", "shape": "2", "data_offsets": [0, 8]}})", kEight,
       "tensor 'w': shape must be a list of sizes"},
      {"{\"w\": {" + kF32x2 + ", \"data_offsets\": [0, 4, 8]}}", kEight,
       "tensor 'w': data_offsets must be [begin, end]"},
      {"{\"w\": {" + kF32x2 + ", \"data_offsets\": [8, 0]}}", kEight,
       "tensor 'w': data_offsets must be [begin, end] with 0 <= begin <= end, got [8,0]"},
      {"{\"w\": {" + kF32x2 + ", \"data_offsets\": [0, \"8\"]}}", kEight,
       "tensor 'w': data_offsets must be"},
      {R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 8]}})", kEight,
       "tensor 'w': F32 [2,3] needs 24 bytes, but data_offsets [0,8] hold 8"},
      {R"({"w": {"dtype": "F64", "shape": [4611686018427387904, 8], "data_offsets": [0, 8]}})",
       kEight, "needs more than 2^63 bytes"},
      {"{\"w\": {" + kF32x2 + ", \"data_offsets\": [0, 8]}, \"w\": {" + kF32x2 +
           ", \"data_offsets\": [0, 8]}}",
       kEight, "tensor 'w': named twice in the header"},
      {R"({"__metadata__": ["a"]})", "", "__metadata__ must be an object of strings"},
      {R"({"__metadata__": {"epoch": 3}})", "", "__metadata__.epoch must be a string, got 3"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string m = read_error(raw_safetensors("h" + std::to_string(i++), c.header, c.data));
    EXPECT_TRUE(test::contains(m, c.expected)) << c.header << "\n" << m;
  }
}

TEST(Safetensors, RejectsOffsetsThatOverlapLeaveGapsOrTrail) {
  const std::string two = R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, )";
  const std::string overlap = read_error(raw_safetensors(
      "overlap", two + R"("b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
      std::string(12, '\0')));
  EXPECT_TRUE(test::contains(overlap, "tensor 'b': its bytes [4, 12) overlap those of 'a' [0, 8)"))
      << overlap;
  const std::string gap = read_error(raw_safetensors(
      "gap", two + R"("b": {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]}})",
      std::string(20, '\0')));
  EXPECT_TRUE(test::contains(gap, "tensor 'b': bytes [8, 12) before it belong to no tensor"))
      << gap;
  const std::string late = read_error(raw_safetensors(
      "late", R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [4, 6]}})", "123456"));
  EXPECT_TRUE(test::contains(late, "tensor 'a': bytes [0, 4) before it")) << late;
  const std::string trailing = read_error(raw_safetensors(
      "trailing", R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}})", "12345"));
  EXPECT_TRUE(test::contains(trailing, "3 bytes after the last tensor belong to no tensor"))
      << trailing;
}

TEST(Safetensors, HeaderErrorsAreShortLinesWithoutTheJsonLibrarysIds) {
  // A 100,000-character dtype is quoted cut short (a message once held 50 million characters).
  const std::string long_dtype =
      read_error(raw_safetensors("long_dtype",
                                 "{\"w\": {\"dtype\": \"" + std::string(100000, 'X') +
                                     "\", \"shape\": [2], \"data_offsets\": [0, 8]}}",
                                 kEight));
  EXPECT_TRUE(test::contains(long_dtype, "unknown dtype \"XXXX")) << long_dtype.substr(0, 300);
  EXPECT_LT(long_dtype.size(), 500u);
  const std::string not_json = read_error(raw_safetensors("not_json", "{\"w\": [1, 2", ""));
  EXPECT_TRUE(test::contains(not_json, "is not JSON: parse error at line 1")) << not_json;
  EXPECT_FALSE(test::contains(not_json, "json.exception")) << not_json;
  // More than the format's 100 MB of header is refused before it is read.
  const uint64_t length = uint64_t(1) << 28;
  std::string head(reinterpret_cast<const char*>(&length), 8);
  const std::string big = test::config_error_of([&] {
    parse_safetensors_header(reinterpret_cast<const unsigned char*>(head.data()), 8,
                             uint64_t(1) << 40, "k", "big.safetensors");
  });
  EXPECT_TRUE(test::contains(big, "more than the 100000000 the format allows")) << big;
}

TEST(Safetensors, TheHeaderAloneTellsWhatTheFileHolds) {
  const std::string path = test::temp_dir() + "/header_only.safetensors";
  write_safetensors(path, every_dtype());
  const SafetensorsHeader header = read_safetensors_header(path, "k");
  const NamedTensors read = read_safetensors(path, "k").tensors;
  ASSERT_EQ(header.entries.size(), read.size());
  for (size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(header.entries[i].name, read[i].first);
    EXPECT_EQ(header.entries[i].shape, read[i].second.sizes().vec());
    EXPECT_EQ(header.entries[i].dtype->dtype, read[i].second.scalar_type());
  }
}

TEST(Safetensors, RejectsBoolBytesOtherThanZeroOrOne) {
  const std::string m = read_error(raw_safetensors(
      "bool", R"({"flags": {"dtype": "BOOL", "shape": [3], "data_offsets": [0, 3]}})",
      std::string("\x01\x00\x02", 3)));
  EXPECT_TRUE(test::contains(m, "tensor 'flags': BOOL byte 2 is 2, not 0 or 1")) << m;
}

TEST(Safetensors, WriterRefusesWhatTheFormatCannotHold) {
  const std::string dir = test::temp_dir();
  EXPECT_TRUE(test::contains(
      test::error_of<ConfigError>([&] {
        write_safetensors(dir + "/c.safetensors", {{"z", torch::ones({2}, torch::kComplexFloat)}});
      }),
      "tensor 'z' has dtype ComplexFloat, which the format has no name for"));
  EXPECT_TRUE(test::contains(test::error_of<ConfigError>([&] {
                               write_safetensors(dir + "/d.safetensors", {{"w", torch::ones({1})},
                                                                          {"w", torch::ones({1})}});
                             }),
                             "tensor 'w' is named twice"));
  EXPECT_TRUE(test::contains(
      test::error_of<ConfigError>([&] {
        write_safetensors(dir + "/m.safetensors", {{"__metadata__", torch::ones({1})}});
      }),
      "may not be named __metadata__"));
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(Safetensors, AFailedWriteLeavesTheOldFileAndNoPartial) {
  const std::string dir = test::temp_dir();
  const std::string path = test::write_file(dir + "/w.safetensors", "old");
  EXPECT_THROW(write_safetensors(path, {{"z", torch::ones({1}, torch::kComplexDouble)}}),
               ConfigError);
  EXPECT_EQ(file_text(path), "old");
  // Renaming onto a folder fails after the temporary file is written: it is removed.
  fs::create_directories(dir + "/folder.safetensors/inside");
  const std::string m = test::error_of<TrainError>([&] {
    write_safetensors(dir + "/folder.safetensors", {{"w", torch::ones({3})}});
  });
  EXPECT_TRUE(test::contains(m, "cannot rename")) << m;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"folder.safetensors", "w.safetensors"}));
  EXPECT_THROW(write_safetensors(dir + "/no/such/dir/w.safetensors", {{"w", torch::ones({1})}}),
               TrainError);
}

}  // namespace
}  // namespace unitrain
