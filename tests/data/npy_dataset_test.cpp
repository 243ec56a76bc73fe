// The npy and npz datasets on files written by Debian's python3-numpy (np.save, np.savez,
// np.savez_compressed), and a ZIP64 archive written here and checked by numpy.
#include "unitrain/data/npy_dataset.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "data_test_util.h"
#include "test_util.h"
#include "unitrain/core/config.h"
#include "unitrain/data/build_data.h"

namespace unitrain {
namespace {

using test::config_error_of;

NpyOptions npy_arrays(NamedStrings arrays, NamedStrings dtypes = {}) {
  NpyOptions o;
  o.arrays = std::move(arrays);
  o.dtypes = std::move(dtypes);
  return o;
}

NpzOptions npz_arrays(const std::string& path, NamedStrings arrays = {}, NamedStrings dtypes = {}) {
  NpzOptions o;
  o.path = path;
  o.arrays = std::move(arrays);
  o.dtypes = std::move(dtypes);
  return o;
}

std::string bytes_of_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(NpyDataset, EveryDtypeLittleAndBigEndian) {
  // Rows [0 1 2] [3 4 5] [6 7 8] [M 1 0], M the type's largest value (below 2^63): the
  // unsigned ones are widened without changing it.
  struct Case {
    std::string descr;
    torch::ScalarType type;
    int64_t largest;
  };
  const std::vector<Case> cases = {{"|i1", torch::kInt8, 127},
                                   {"|u1", torch::kUInt8, 255},
                                   {"<i2", torch::kInt16, 32767},
                                   {">i2", torch::kInt16, 32767},
                                   {"<u2", torch::kInt32, 65535},
                                   {">u2", torch::kInt32, 65535},
                                   {"<i4", torch::kInt32, 2147483647},
                                   {">i4", torch::kInt32, 2147483647},
                                   {"<u4", torch::kInt64, 4294967295},
                                   {">u4", torch::kInt64, 4294967295},
                                   {"<i8", torch::kInt64, INT64_MAX},
                                   {">i8", torch::kInt64, INT64_MAX},
                                   {"<u8", torch::kInt64, INT64_MAX},
                                   {">u8", torch::kInt64, INT64_MAX},
                                   {"<f2", torch::kFloat32, 1024},  // floats: float32
                                   {">f2", torch::kFloat32, 1024},
                                   {"<f4", torch::kFloat32, 1 << 24},
                                   {">f4", torch::kFloat32, 1 << 24},
                                   {"<f8", torch::kFloat32, int64_t{1} << 53},
                                   {">f8", torch::kFloat32, int64_t{1} << 53}};
  const std::string dir = test::temp_dir();
  std::string script = "import numpy as np\n";
  for (size_t k = 0; k < cases.size(); ++k) {
    script += "np.save(d + 'a" + std::to_string(k) +
              ".npy', np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [" +
              std::to_string(cases[k].largest) + ", 1, 0]], dtype='" + cases[k].descr + "'))\n";
  }
  script += "np.save(d + 'b.npy', np.array([[True, False], [False, False], [True, True]]))\n";
  test::run_python(dir, script);
  for (size_t k = 0; k < cases.size(); ++k) {
    SCOPED_TRACE(cases[k].descr);
    DatasetPtr d = load_npy(npy_arrays({{"x", dir + "/a" + std::to_string(k) + ".npy"}}));
    ASSERT_EQ(d->size(), 4);
    torch::Tensor x = d->get_batch({3, 0, 3, 1}).at("x");
    EXPECT_EQ(x.scalar_type(), cases[k].type);
    torch::Tensor expected = torch::tensor({cases[k].largest, int64_t{1}, int64_t{0}, int64_t{0},
                                            int64_t{1}, int64_t{2}, cases[k].largest, int64_t{1},
                                            int64_t{0}, int64_t{3}, int64_t{4}, int64_t{5}})
                                 .reshape({4, 3});
    EXPECT_TRUE(torch::equal(x.to(torch::kInt64), expected)) << x;
    EXPECT_TRUE(
        torch::equal(d->get(2).at("x").to(torch::kInt64), torch::tensor({6, 7, 8}, torch::kInt64)));
  }
  DatasetPtr b = load_npy(npy_arrays({{"mask", dir + "/b.npy"}}));
  torch::Tensor mask = b->get_batch({2, 0}).at("mask");
  EXPECT_EQ(mask.scalar_type(), torch::kBool);
  EXPECT_TRUE(torch::equal(mask, torch::tensor({true, true, true, false}).reshape({2, 2})));
}

TEST(NpyDataset, FortranOrderAndThreeDimensions) {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import numpy as np
a = np.arange(60).reshape(5, 3, 4)
np.save(d + 'f.npy', np.asfortranarray(a.astype('<f4')))
np.save(d + 'c.npy', a.astype('>i2'))
np.save(d + 'f2.npy', np.asfortranarray(a[:, :, 0].astype('>f8')))
assert np.load(d + 'f.npy', mmap_mode='r').flags.f_contiguous
)");
  DatasetPtr d =
      load_npy(npy_arrays({{"x", dir + "/f.npy"}, {"c", dir + "/c.npy"}, {"y", dir + "/f2.npy"}}));
  torch::Tensor all = torch::arange(60, torch::kInt64).reshape({5, 3, 4});
  Batch b = d->get_batch({4, 1, 1});
  torch::Tensor rows = all.index_select(0, torch::tensor({4, 1, 1}, torch::kInt64));
  EXPECT_EQ(b.at("x").sizes(), (std::vector<int64_t>{3, 3, 4}));
  EXPECT_TRUE(torch::equal(b.at("x"), rows.to(torch::kFloat32)));
  EXPECT_TRUE(torch::equal(b.at("c"), rows.to(torch::kInt16)));
  EXPECT_TRUE(torch::equal(b.at("y"), rows.select(2, 0).to(torch::kFloat32)));
  EXPECT_FALSE(d->info().count("num_features"));  // x is 3-D
  EXPECT_FALSE(d->info().count("num_classes"));   // y is float
  EXPECT_TRUE(d->in_memory());  // small mapped files stay in the page cache: read inline
}

TEST(NpyDataset, OnlySmallMappedFilesCountAsInMemory) {
  // workers: auto reads in-memory data in the training thread; a mapped file over 64 MiB may
  // need the disk on every batch, so it gets reader threads.
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import numpy as np
np.lib.format.open_memmap(d + 'big.npy', mode='w+', dtype=np.float32, shape=(17 * 2**20 // 16, 16)).flush()
np.save(d + 'small.npy', np.zeros((17 * 2**20 // 16, 1), np.uint8))
)");
  EXPECT_FALSE(load_npy(npy_arrays({{"x", dir + "/big.npy"}}))->in_memory());
  EXPECT_TRUE(load_npy(npy_arrays({{"x", dir + "/small.npy"}}))->in_memory());
  EXPECT_FALSE(
      load_npy(npy_arrays({{"x", dir + "/small.npy"}, {"y", dir + "/big.npy"}}))->in_memory());
}

TEST(NpyDataset, DtypeConversionAndInfo) {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import numpy as np
np.save(d + 'x.npy', np.linspace(0, 1, 12).reshape(6, 2))
np.save(d + 'y.npy', np.array([0, 2, 1, 4, 2, 0], dtype=np.uint8))
)");
  testing::internal::CaptureStderr();  // the console log
  DatasetPtr kept = load_npy(npy_arrays({{"x", dir + "/x.npy"}, {"y", dir + "/y.npy"}}));
  const std::string log = testing::internal::GetCapturedStderr();
  // NumPy's default float is float64; models are float32: read as float32, said once.
  EXPECT_EQ(kept->get(0).at("x").scalar_type(), torch::kFloat32);
  EXPECT_NE(log.find("x.npy' (key x) is float64; read as float32"), std::string::npos) << log;
  EXPECT_NE(log.find("set dtypes: {x: float64}"), std::string::npos) << log;
  EXPECT_EQ(log.find("y.npy"), std::string::npos) << log;  // integer targets stay as they are
  EXPECT_EQ(kept->get(0).at("y").scalar_type(), torch::kUInt8);
  DatasetPtr wide = load_npy(npy_arrays({{"x", dir + "/x.npy"}}, {{"x", "float64"}}));
  EXPECT_EQ(wide->get_batch({1, 2}).at("x").scalar_type(), torch::kFloat64);
  EXPECT_DOUBLE_EQ(wide->get(1).at("x")[0].item<double>(), 2.0 / 11);
  EXPECT_EQ(kept->info().at("num_features"), 2);
  EXPECT_EQ(kept->info().at("num_classes"), 5);
  DatasetPtr d = load_npy(npy_arrays({{"x", dir + "/x.npy"}, {"y", dir + "/y.npy"}},
                                     {{"x", "float32"}, {"y", "int64"}}));
  Batch b = d->get_batch({3, 5});
  EXPECT_EQ(b.at("x").scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::allclose(
      b.at("x"), torch::tensor({6.0F / 11, 7.0F / 11, 10.0F / 11, 1.0F}).reshape({2, 2})));
  EXPECT_TRUE(torch::equal(b.at("y"), torch::tensor({4, 0}, torch::kInt64)));
  DatasetPtr as_float = load_npy(npy_arrays({{"y", dir + "/y.npy"}}, {{"y", "float32"}}));
  EXPECT_FALSE(as_float->info().count("num_classes"));
}

TEST(NpyDataset, StringLabelsAreClassNames) {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import numpy as np
np.save(d + 'x.npy', np.zeros((4, 2), np.float32))
np.save(d + 'u.npy', np.array(['dog', 'cat', 'чайка', 'dog']))
np.save(d + 'be.npy', np.array(['dog', 'cat', 'чайка', 'dog']).astype('>U5'))
np.save(d + 's.npy', np.array([b'dog', b'cat', b'owl', b'dog']))
np.save(d + 'two.npy', np.array([['a', 'b'], ['c', 'd'], ['e', 'f'], ['g', 'h']]))
np.savez_compressed(d + 'z.npz', x=np.zeros((4, 2), np.float32), y=np.array(['b', 'a', 'b', 'a']))
)");
  for (const std::string f : {"u.npy", "be.npy"}) {
    DatasetPtr d = load_npy(npy_arrays({{"x", dir + "/x.npy"}, {"y", dir + "/" + f}}));
    EXPECT_EQ(d->class_names(), (std::vector<std::string>{"cat", "dog", "чайка"})) << f;
    EXPECT_EQ(d->info().at("num_classes"), 3);
    EXPECT_TRUE(torch::equal(d->get_batch({0, 1, 2, 3}).at("y"),
                             torch::tensor({1, 0, 2, 1}, torch::kInt64)))
        << f;
  }
  NpyOptions o = npy_arrays({{"x", dir + "/x.npy"}, {"y", dir + "/s.npy"}});
  o.classes = {"owl", "dog", "cat", "cow"};
  DatasetPtr bytes = load_npy(o);
  EXPECT_EQ(bytes->info().at("num_classes"), 4);
  EXPECT_TRUE(torch::equal(bytes->get_batch({0, 1, 2, 3}).at("y"),
                           torch::tensor({1, 2, 0, 1}, torch::kInt64)));
  o.classes = {"dog", "cat"};
  std::string msg = config_error_of([&] { load_npy(o); });
  EXPECT_TRUE(
      test::contains(msg, "s.npy' row 2: class 'owl' is not one of the 2 classes (dog, cat)"))
      << msg;
  msg = config_error_of([&] { load_npy(npy_arrays({{"y", dir + "/two.npy"}})); });
  EXPECT_TRUE(test::contains(msg, "holds strings (dtype '<U1') of shape (4, 2)")) << msg;
  NpzOptions z;
  z.path = dir + "/z.npz";
  DatasetPtr npz = load_npz(z);
  EXPECT_EQ(npz->class_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(torch::equal(npz->get_batch({0, 1}).at("y"), torch::tensor({1, 0}, torch::kInt64)));
}

TEST(NpzDataset, StoredAndCompressedArchives) {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import numpy as np
images = np.arange(40, dtype=np.float32).reshape(10, 4)
labels = np.array([3, 1, 0, 2, 2, 1, 0, 3, 1, 1])
np.savez(d + 's.npz', images=images, labels=labels)
np.savez_compressed(d + 'c.npz', images=images, labels=labels)
)");
  for (const std::string name : {"s.npz", "c.npz"}) {
    SCOPED_TRACE(name);
    DatasetPtr d = load_npz(npz_arrays(dir + "/" + name, {{"x", "images"}, {"y", "labels"}}));
    ASSERT_EQ(d->size(), 10);
    Batch b = d->get_batch({9, 2});
    EXPECT_TRUE(torch::equal(
        b.at("x"),
        torch::tensor({36.0F, 37.0F, 38.0F, 39.0F, 8.0F, 9.0F, 10.0F, 11.0F}).reshape({2, 4})));
    EXPECT_TRUE(torch::equal(b.at("y"), torch::tensor({1, 0}, torch::kInt64)));
    EXPECT_EQ(d->info().at("num_features"), 4);
    EXPECT_EQ(d->info().at("num_classes"), 4);
    EXPECT_TRUE(d->in_memory());  // inflated, or a small mapped file
    // No arrays given: every array under its own name, in the archive's order.
    DatasetPtr all = load_npz(npz_arrays(dir + "/" + name));
    EXPECT_EQ(all->get(0).names(), (std::vector<std::string>{"images", "labels"}));
  }
}

/// `npy` as the only member of a zip archive in ZIP64 form: sizes and offset 0xFFFFFFFF in
/// the central directory with the real values in its ZIP64 extra field, a ZIP64 end record
/// and its locator (what zip writers emit for members and archives beyond 4 GiB).
std::string zip64_archive_of(const std::string& member, const std::string& npy) {
  std::string out;
  auto put = [&](uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  };
  const uint32_t crc = test::crc32_of(npy);
  put(0x04034b50, 4);  // local header
  put(45, 2), put(0, 2), put(0, 2), put(0, 4), put(crc, 4), put(0xFFFFFFFF, 4), put(0xFFFFFFFF, 4),
      put(member.size(), 2), put(20, 2);
  out += member;
  put(1, 2), put(16, 2), put(npy.size(), 8), put(npy.size(), 8);
  out += npy;
  const uint64_t directory = out.size();
  put(0x02014b50, 4);  // central directory entry
  put(45, 2), put(45, 2), put(0, 2), put(0, 2), put(0, 4), put(crc, 4), put(0xFFFFFFFF, 4),
      put(0xFFFFFFFF, 4), put(member.size(), 2), put(28, 2), put(0, 2), put(0, 2), put(0, 2),
      put(0, 4), put(0xFFFFFFFF, 4);
  out += member;
  put(1, 2), put(24, 2), put(npy.size(), 8), put(npy.size(), 8), put(0, 8);
  const uint64_t end64 = out.size();
  put(0x06064b50, 4), put(44, 8), put(45, 2), put(45, 2), put(0, 4), put(0, 4), put(1, 8),
      put(1, 8), put(end64 - directory, 8), put(directory, 8);
  put(0x07064b50, 4), put(0, 4), put(end64, 8), put(1, 4);
  put(0x06054b50, 4), put(0, 2), put(0, 2), put(0xFFFF, 2), put(0xFFFF, 2), put(0xFFFFFFFF, 4),
      put(0xFFFFFFFF, 4), put(0, 2);
  return out;
}

TEST(NpzDataset, Zip64ArchiveAndLocalZip64Fields) {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import numpy as np, zipfile
np.save(d + 'm.npy', np.arange(6, dtype='<i4').reshape(3, 2))
with zipfile.ZipFile(d + 'forced.npz', 'w') as z:
    with z.open('m.npy', 'w', force_zip64=True) as f:
        np.lib.format.write_array(f, np.arange(6, dtype='<i4').reshape(3, 2))
)");
  test::write_file(dir + "/z64.npz", zip64_archive_of("m.npy", bytes_of_file(dir + "/m.npy")));
  // The hand-made archive is valid for numpy too.
  test::run_python(dir, R"(import numpy as np
assert (np.load(d + 'z64.npz')['m'] == np.arange(6).reshape(3, 2)).all()
)");
  for (const std::string name : {"z64.npz", "forced.npz"}) {
    SCOPED_TRACE(name);
    DatasetPtr d = load_npz(npz_arrays(dir + "/" + name, {{"x", "m"}}));
    EXPECT_TRUE(torch::equal(d->get_batch({2, 0}).at("x"),
                             torch::tensor({4, 5, 0, 1}, torch::kInt32).reshape({2, 2})));
  }
}

TEST(NpyDataset, BadFilesAndArraysAreNamed) {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import numpy as np
np.save(d + 'x5.npy', np.zeros((5, 2), dtype=np.float32))
np.save(d + 'y4.npy', np.zeros(4, dtype=np.int64))
np.save(d + 'obj.npy', np.array([1, 'a'], dtype=object), allow_pickle=True)
np.save(d + 'rec.npy', np.zeros(3, dtype=[('a', '<i4'), ('b', '<f8')]))
np.save(d + 'complex.npy', np.zeros(3, dtype=np.complex64))
np.save(d + 'scalar.npy', np.float32(3))
np.save(d + 'huge.npy', np.array([1, 2**63], dtype=np.uint64))
np.savez(d + 'a.npz', images=np.zeros((2, 2)), labels=np.zeros(2))
np.savez_compressed(d + 'c.npz', images=np.arange(1000.0))
)");
  auto npy_error = [&](NamedStrings arrays, NamedStrings dtypes = {}) {
    return config_error_of([&] { load_npy(npy_arrays(arrays, dtypes)); });
  };
  EXPECT_TRUE(test::contains(
      npy_error({{"x", dir + "/x5.npy"}, {"y", dir + "/y4.npy"}}),
      "npy: '" + dir + "/y4.npy' (key y) has 4 rows but '" + dir + "/x5.npy' (key x) has 5"));
  EXPECT_TRUE(test::contains(npy_error({{"x", dir + "/none.npy"}}),
                             "npy: arrays.x: file '" + dir + "/none.npy' does not exist"));
  EXPECT_TRUE(
      test::contains(npy_error({{"x", dir + "/obj.npy"}}), "holds Python objects (dtype '|O')"));
  EXPECT_TRUE(
      test::contains(npy_error({{"x", dir + "/rec.npy"}}),
                     "holds a structured (record) array, dtype [('a', '<i4'), ('b', '<f8')]"));
  EXPECT_TRUE(
      test::contains(npy_error({{"x", dir + "/complex.npy"}}), "its dtype '<c8' is not supported"));
  EXPECT_TRUE(test::contains(npy_error({{"x", dir + "/scalar.npy"}}), "(key x) is 0-d"));
  EXPECT_TRUE(test::contains(npy_error({{"x", dir + "/x5.npy"}}, {{"z", "float32"}}),
                             "dtypes names key 'z', which is not one of the arrays' keys (x)"));
  EXPECT_TRUE(test::contains(npy_error({{"x", dir + "/x5.npy"}}, {{"x", "flaot32"}}),
                             "unknown dtype 'flaot32' (did you mean 'float32'?)"));
  const std::string text = test::write_file(dir + "/text.npy", "x,y\n1,2\n");
  EXPECT_TRUE(test::contains(npy_error({{"x", text}}), "not a .npy file"));
  // Truncated: the header promises 5 x 2 float32 (40 bytes of data).
  std::filesystem::copy_file(dir + "/x5.npy", dir + "/cut.npy");
  std::filesystem::resize_file(dir + "/cut.npy", std::filesystem::file_size(dir + "/x5.npy") - 3);
  EXPECT_TRUE(test::contains(npy_error({{"x", dir + "/cut.npy"}}),
                             "npy: '" + dir +
                                 "/cut.npy': truncated: shape (5, 2) of '<f4' needs 40 "
                                 "bytes of data, the file holds 37"));
  // A uint64 value beyond int64 is refused when read.
  DatasetPtr huge = load_npy(npy_arrays({{"x", dir + "/huge.npy"}}));
  EXPECT_TRUE(test::contains(config_error_of([&] {
                               huge->get_batch({0, 1});
                             }),
                             "holds the uint64 value 9223372036854775808, beyond int64"));
  EXPECT_TRUE(torch::equal(huge->get(0).at("x"), torch::tensor(1, torch::kInt64)));

  auto npz_error = [&](const std::string& path, NamedStrings arrays) {
    return config_error_of([&] { load_npz(npz_arrays(path, arrays)); });
  };
  EXPECT_TRUE(test::contains(npz_error(dir + "/a.npz", {{"x", "imgs"}}),
                             "npz: '" + dir +
                                 "/a.npz' has no array 'imgs' (arrays.x) (did you mean "
                                 "'images'?); it holds: images, labels"));
  EXPECT_TRUE(test::contains(npz_error(dir + "/x5.npy", {}),
                             "not a zip archive (no end of central directory record); it is a .npy "
                             "file: read it with the npy dataset"));
  std::filesystem::copy_file(dir + "/a.npz", dir + "/cut.npz");
  std::filesystem::resize_file(dir + "/cut.npz", std::filesystem::file_size(dir + "/a.npz") - 30);
  EXPECT_TRUE(test::contains(npz_error(dir + "/cut.npz", {}), "not a zip archive"));
  // A damaged compressed member: one byte of its deflate stream changed.
  std::string damaged = bytes_of_file(dir + "/c.npz");
  damaged[damaged.size() / 3] = static_cast<char>(damaged[damaged.size() / 3] ^ 0x55);
  test::write_file(dir + "/damaged.npz", damaged);
  const std::string damaged_error = npz_error(dir + "/damaged.npz", {});
  EXPECT_TRUE(test::contains(damaged_error, "member 'images.npy'")) << damaged_error;
  EXPECT_TRUE(test::contains(damaged_error, "the archive is damaged")) << damaged_error;
}

TEST(NpzDataset, BuiltFromAConfigSection) {
  register_builtin_datasets();
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import numpy as np
np.savez(d + 'd.npz', a=np.ones((4, 3)), b=np.arange(4))
)");
  const std::string yaml = "train: {type: npz, args: {path: " + dir +
                           "/d.npz, arrays: {x: a, y: b}, dtypes: {x: float32}}}\n";
  DataSplits s = build_data(Config(Config::from_string(yaml).node(), "data"), 0);
  EXPECT_EQ(s.train->get(1).at("x").scalar_type(), torch::kFloat32);
  EXPECT_EQ(s.train->info().at("num_classes"), 4);
  const std::string bad =
      "train: {type: npz, args: {path: " + dir + "/d.npz, dtypes: {x: float33}}}\n";
  EXPECT_TRUE(test::contains(
      config_error_of([&] { build_data(Config(Config::from_string(bad).node(), "data"), 0); }),
      "data.train.args.dtypes.x: unknown dtype 'float33'"));
  const std::string not_map = "train: {type: npy, args: {arrays: [a.npy]}}\n";
  EXPECT_TRUE(test::contains(
      config_error_of([&] { build_data(Config(Config::from_string(not_map).node(), "data"), 0); }),
      "data.train.args.arrays: expected a map such as {x: images.npy"));
}

}  // namespace
}  // namespace unitrain
