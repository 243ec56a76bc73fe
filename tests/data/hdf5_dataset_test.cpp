// The hdf5 dataset on files written by Debian's python3-h5py.
#include "unitrain/data/hdf5_dataset.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

#include "data_test_util.h"
#include "test_util.h"

namespace unitrain {
namespace {

using test::config_error_of;

Hdf5Options hdf5_files(std::vector<std::string> paths, NamedStrings datasets,
                       NamedStrings dtypes = {}) {
  Hdf5Options o;
  o.paths = std::move(paths);
  o.datasets = std::move(datasets);
  o.dtypes = std::move(dtypes);
  return o;
}

/// Two files of 3 and 2 rows: /images [N, 2, 2] float32 (chunked and gzip-compressed in the
/// second) whose row i holds 4i .. 4i+3 over both files, /meta/labels [N] int64 = 10 * i.
std::string write_two_h5_files() {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import h5py, numpy as np
rows = np.arange(20, dtype=np.float32).reshape(5, 2, 2)
with h5py.File(d + 'a.h5', 'w') as f:
    f['images'] = rows[:3]
    f['meta/labels'] = np.arange(3) * 10
with h5py.File(d + 'b.h5', 'w') as f:
    f.create_dataset('images', data=rows[3:], chunks=(1, 2, 2), compression='gzip')
    f['meta/labels'] = np.arange(3, 5) * 10
)");
  return dir;
}

TEST(Hdf5Dataset, SeveralFilesConcatenatedRowsInBatchOrder) {
  const std::string dir = write_two_h5_files();
  DatasetPtr d = load_hdf5(
      hdf5_files({dir + "/a.h5", dir + "/b.h5"}, {{"x", "/images"}, {"y", "/meta/labels"}}));
  ASSERT_EQ(d->size(), 5);
  const std::vector<int64_t> rows = {4, 0, 3, 0, 2, 1};
  Batch b = d->get_batch(rows);
  torch::Tensor all = torch::arange(20, torch::kFloat32).reshape({5, 2, 2});
  torch::Tensor index = torch::tensor(rows, torch::kInt64);
  EXPECT_TRUE(torch::equal(b.at("x"), all.index_select(0, index)));
  EXPECT_TRUE(torch::equal(b.at("y"), index * 10));
  EXPECT_TRUE(torch::equal(d->get(3).at("x"), all[3]));
  EXPECT_EQ(d->info().at("num_classes"), 41);
  EXPECT_FALSE(d->info().count("num_features"));  // x is 3-D
  EXPECT_FALSE(d->in_memory());
}

TEST(Hdf5Dataset, LoaderThreadsReadAtOnce) {
  const std::string dir = write_two_h5_files();
  DatasetPtr d = load_hdf5(hdf5_files({dir + "/a.h5", dir + "/b.h5"}, {{"y", "meta/labels"}}));
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 200; ++k) {
        const int64_t i = (k * 7 + t) % 5, j = (k * 3 + t + 1) % 5;
        torch::Tensor y = d->get_batch({i, j}).at("y");
        if (y[0].item<int64_t>() != 10 * i || y[1].item<int64_t>() != 10 * j) ++wrong[t];
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

TEST(Hdf5Dataset, DtypesByteOrdersAndConversion) {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import h5py, numpy as np
v = np.array([[0, 1], [2, 3], [250, 5]])
with h5py.File(d + 't.h5', 'w') as f:
    for t in ['i1', 'u1', '>i2', 'u2', '>i4', '<u4', '>i8', '>u8', '<f2', '>f4', '>f8']:
        f[t.strip('<>')] = (v // 2 if t == 'i1' else v).astype(t)
    f['bool'] = np.array([[True, False], [False, False], [True, True]])
    f['big_u8'] = np.array([1, 2**63, 3], dtype=np.uint64)
    f['u2max'] = np.array([65535, 0, 1], dtype=np.uint16)
    assert f['i2'].dtype == np.dtype('>i2')
)");
  const std::vector<std::pair<std::string, torch::ScalarType>> cases = {
      {"i1", torch::kInt8},    {"u1", torch::kUInt8},  {"i2", torch::kInt16},
      {"u2", torch::kInt32},   {"i4", torch::kInt32},  {"u4", torch::kInt64},
      {"i8", torch::kInt64},   {"u8", torch::kInt64},  {"f2", torch::kFloat32},
      {"f4", torch::kFloat32}, {"f8", torch::kFloat32}};  // floats: float32
  torch::Tensor expected = torch::tensor({250, 5, 0, 1}, torch::kInt64).reshape({2, 2});
  for (const auto& [name, type] : cases) {
    SCOPED_TRACE(name);
    DatasetPtr d = load_hdf5(hdf5_files({dir + "/t.h5"}, {{"x", name}}));
    torch::Tensor x = d->get_batch({2, 0}).at("x");
    EXPECT_EQ(x.scalar_type(), type);
    EXPECT_TRUE(
        torch::equal(x.to(torch::kInt64), name == "i1" ? expected.div(2, "floor") : expected))
        << x;
  }
  DatasetPtr b = load_hdf5(hdf5_files({dir + "/t.h5"}, {{"mask", "bool"}}));
  EXPECT_TRUE(torch::equal(b->get_batch({2, 0}).at("mask"),
                           torch::tensor({true, true, true, false}).reshape({2, 2})));
  DatasetPtr u = load_hdf5(hdf5_files({dir + "/t.h5"}, {{"y", "u2max"}}));
  EXPECT_EQ(u->get(0).at("y").item<int64_t>(), 65535);
  EXPECT_EQ(u->info().at("num_classes"), 65536);
  DatasetPtr huge = load_hdf5(hdf5_files({dir + "/t.h5"}, {{"x", "big_u8"}}));
  EXPECT_EQ(huge->get(2).at("x").item<int64_t>(), 3);
  EXPECT_TRUE(test::contains(config_error_of([&] {
                               huge->get_batch({0, 1});
                             }),
                             "holds the uint64 value 9223372036854775808, beyond int64"));
  DatasetPtr converted = load_hdf5(
      hdf5_files({dir + "/t.h5"}, {{"x", "u1"}, {"y", "f8"}}, {{"x", "float32"}, {"y", "int64"}}));
  Batch c = converted->get_batch({2});
  EXPECT_EQ(c.at("x").scalar_type(), torch::kFloat32);
  EXPECT_EQ(c.at("y").scalar_type(), torch::kInt64);
  EXPECT_EQ(converted->info().at("num_features"), 2);
  EXPECT_EQ(converted->info().at("num_classes"), 251);
}

TEST(Hdf5Dataset, BadFilesAndDatasetsAreNamed) {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import h5py, numpy as np
with h5py.File(d + 'a.h5', 'w') as f:
    f['x'] = np.zeros((4, 3), dtype=np.float32)
    f['y'] = np.zeros(3, dtype=np.int64)
    f['g/deep'] = np.zeros(4)
    f['rec'] = np.zeros(4, dtype=[('a', '<i4'), ('b', '<f8')])
    f['s'] = np.array([b'ab', b'cd', b'ef', b'gh'])
with h5py.File(d + 'b.h5', 'w') as f:
    f['x'] = np.zeros((2, 5), dtype=np.float32)
    f['y'] = np.zeros(2, dtype=np.int64)
)");
  auto error = [&](std::vector<std::string> paths, NamedStrings datasets) {
    return config_error_of([&] { load_hdf5(hdf5_files(paths, datasets)); });
  };
  const std::string a = dir + "/a.h5", b = dir + "/b.h5";
  EXPECT_TRUE(test::contains(error({a}, {{"x", "/images"}}),
                             "hdf5: '" + a +
                                 "' has no dataset '/images' (datasets.x); it holds: "
                                 "/g/deep, /rec, /s, /x, /y"));
  EXPECT_TRUE(test::contains(error({a}, {{"x", "/g"}}),
                             "has no dataset '/g' (datasets.x; that is a group)"));
  EXPECT_TRUE(test::contains(error({a}, {{"x", "x"}, {"y", "y"}}),
                             "hdf5: '" + a +
                                 "' dataset 'y' (key y) has 3 rows but dataset 'x' (key x) "
                                 "has 4"));
  EXPECT_TRUE(test::contains(
      error({a, b}, {{"x", "x"}}),
      "hdf5: dataset 'x' is (4, 3) float32 in '" + a + "' but (2, 5) float32 in '" + b + "'"));
  EXPECT_TRUE(
      test::contains(error({a}, {{"x", "rec"}}), "'" + a + "' dataset 'rec' is a compound"));
  EXPECT_TRUE(test::contains(error({a}, {{"x", "s"}}),
                             "'" + a + "' dataset 's' holds strings (2 bytes each)"));
  EXPECT_TRUE(test::contains(error({dir + "/none.h5"}, {{"x", "x"}}),
                             "hdf5: paths[0]: file '" + dir + "/none.h5' does not exist"));
  const std::string text = test::write_file(dir + "/text.h5", "not hdf5 at all");
  EXPECT_TRUE(test::contains(error({text}, {{"x", "x"}}),
                             "hdf5: cannot open '" + text + "' as an HDF5 file"));
  EXPECT_TRUE(test::contains(error({}, {{"x", "x"}}), "hdf5: paths is empty"));
}

}  // namespace
}  // namespace unitrain
