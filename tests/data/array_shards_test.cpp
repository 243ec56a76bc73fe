// npy and npz data split into shard files, and the declared num_classes of the array datasets
// (npy, npz, hdf5), on files written by Debian's python3-numpy and python3-h5py.
#include "unitrain/data/array_shards.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <numeric>

#include "data_test_util.h"
#include "test_util.h"
#include "unitrain/core/config.h"
#include "unitrain/data/build_data.h"
#include "unitrain/data/hdf5_dataset.h"
#include "unitrain/data/npy_dataset.h"

namespace unitrain {
namespace {

using test::config_error_of;

/// 30 rows: x float32 [30, 3] = 0..89, y int64 = row % 7, saved whole (x.npy, y.npy, all.npz)
/// and split two ways: a_* at rows 10 and 25; b_* at rows 1, 1 (an empty shard) and 29.
const char* kShardsScript = R"(import numpy as np
x = np.arange(90, dtype=np.float32).reshape(30, 3)
y = np.arange(30) % 7
np.save(d + 'x.npy', x)
np.save(d + 'y.npy', y)
np.savez(d + 'all.npz', x=x, y=y)
for split, cuts in (('a', [0, 10, 25, 30]), ('b', [0, 1, 1, 29, 30])):
    for i in range(len(cuts) - 1):
        rows = slice(cuts[i], cuts[i + 1])
        np.save(d + split + '_x_%d.npy' % i, x[rows])
        np.save(d + split + '_y_%d.npy' % i, y[rows])
        np.savez(d + split + '_%d.npz' % i, x=x[rows], y=y[rows])
)";

NpyOptions npy_shard_arrays(const std::string& x, const std::string& y) {
  NpyOptions o;
  o.arrays = {{"x", x}, {"y", y}};
  return o;
}

/// Every example of `d`, in a shuffled order (the same for every dataset of that size).
Batch every_row_shuffled(const Dataset& d) {
  std::vector<int64_t> order(static_cast<size_t>(d.size()));
  std::iota(order.begin(), order.end(), 0);
  std::reverse(order.begin() + order.size() / 3, order.end());
  std::rotate(order.begin(), order.begin() + 7, order.end());
  return d.get_batch(order);
}

void expect_same_examples(const Dataset& a, const Dataset& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.info(), b.info());
  const Batch ra = every_row_shuffled(a);
  const Batch rb = every_row_shuffled(b);
  for (const char* key : {"x", "y"}) {
    EXPECT_EQ(ra.at(key).scalar_type(), rb.at(key).scalar_type()) << key;
    EXPECT_TRUE(torch::equal(ra.at(key), rb.at(key))) << key;
  }
}

TEST(ArrayShards, RowsAreTheOneFilesWhateverTheSplit) {
  const std::string dir = test::temp_dir();
  test::run_python(dir, kShardsScript);
  DatasetPtr one = load_npy(npy_shard_arrays(dir + "/x.npy", dir + "/y.npy"));
  EXPECT_EQ(one->info().at("num_classes"), 7);
  EXPECT_EQ(one->info().at("num_features"), 3);
  for (const std::string split : {"a", "b"}) {
    DatasetPtr sharded =
        load_npy(npy_shard_arrays(dir + "/" + split + "_x_*.npy", dir + "/" + split + "_y_*.npy"));
    expect_same_examples(*one, *sharded);
    NpzOptions glob;
    glob.path = dir + "/" + split + "_*.npz";
    expect_same_examples(*one, *load_npz(glob));
  }
  NpzOptions listed;
  listed.paths = {dir + "/a_0.npz", dir + "/a_1.npz", dir + "/a_2.npz"};
  expect_same_examples(*one, *load_npz(listed));
  // Listed out of name order, the rows follow the list.
  listed.paths = {dir + "/a_2.npz", dir + "/a_0.npz", dir + "/a_1.npz"};
  DatasetPtr reordered = load_npz(listed);
  EXPECT_TRUE(torch::equal(reordered->get(0).at("x"), one->get(25).at("x")));
  EXPECT_TRUE(torch::equal(reordered->get(5).at("y"), one->get(0).at("y")));
}

TEST(ArrayShards, ValidationSplitIsTheOneFilesWhateverTheSplit) {
  register_builtin_datasets();
  const std::string dir = test::temp_dir();
  test::run_python(dir, kShardsScript);
  auto splits = [&](const std::string& x, const std::string& y) {
    const std::string yaml = "train: {type: npy, args: {arrays: {x: '" + dir + "/" + x + "', y: '" +
                             dir + "/" + y + "'}}}\nvalidation_ratio: 0.3\n";
    return build_data(Config(Config::from_string(yaml).node(), "data"), 11);
  };
  const DataSplits one = splits("x.npy", "y.npy");
  ASSERT_TRUE(one.val);
  for (const std::string split : {"a", "b"}) {
    const DataSplits sharded = splits(split + "_x_*.npy", split + "_y_*.npy");
    expect_same_examples(*one.train, *sharded.train);
    expect_same_examples(*one.val, *sharded.val);
  }
}

TEST(ArrayShards, BadShardsAreNamed) {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import numpy as np
for i, n in enumerate([4, 6]):
    np.save(d + 'x_%d.npy' % i, np.zeros((n, 2), np.float32))
    np.save(d + 'y_%d.npy' % i, np.zeros(10 - n, np.int64))
    np.save(d + 'w_%d.npy' % i, np.zeros((n, 2), np.float32 if i == 0 else np.float64))
    np.save(d + 'r_%d.npy' % i, np.zeros((n, 2 + i), np.float32))
    np.save(d + 's_%d.npy' % i, np.array(['cat', 'dog'] * 3)[:n])
np.save(d + 'z_0.npy', np.zeros(4, np.int64))
np.savez(d + 'p_0.npz', x=np.zeros((3, 2)), y=np.zeros(3, np.int64))
np.savez(d + 'p_1.npz', x=np.zeros((3, 2)))
)");
  auto npy_error = [&](const std::string& x, const std::string& y) {
    return config_error_of([&] { load_npy(npy_shard_arrays(dir + "/" + x, dir + "/" + y)); });
  };
  EXPECT_TRUE(test::contains(npy_error("x_*.npy", "q_*.npy"),
                             "npy: arrays.y: path '" + dir + "/q_*.npy' matches no file"));
  // Same totals (10 rows), but shard 0 holds 4 x rows and 6 y rows.
  EXPECT_TRUE(test::contains(npy_error("x_*.npy", "y_*.npy"),
                             "npy: '" + dir + "/y_0.npy' (key y) has 6 rows but '" + dir +
                                 "/x_0.npy' (key x) has 4; the arrays of one shard hold the "
                                 "same examples"));
  EXPECT_TRUE(
      test::contains(npy_error("x_*.npy", "z_*.npy"), "npy: arrays.y ('" + dir +
                                                          "/z_*.npy') matches 1 files but arrays.x "
                                                          "matches 2"));
  EXPECT_TRUE(test::contains(npy_error("w_*.npy", "x_*.npy"),
                             "npy: '" + dir +
                                 "/w_1.npy' (key x) has rows of shape (2,) float64 but '" + dir +
                                 "/w_0.npy' has (2,) float32"));
  EXPECT_TRUE(test::contains(npy_error("r_*.npy", "x_*.npy"),
                             "npy: '" + dir +
                                 "/r_1.npy' (key x) has rows of shape (3,) float32 but '" + dir +
                                 "/r_0.npy' has (2,) float32"));
  EXPECT_TRUE(test::contains(npy_error("x_*.npy", "s_*.npy"),
                             "holds class names and the data has 2 shards: list the names in "
                             "data.*.args.classes"));
  NpyOptions named = npy_shard_arrays(dir + "/r_0.npy", dir + "/s_*.npy");
  named.arrays.front().second = dir + "/x_*.npy";
  named.classes = {"cat", "dog"};
  DatasetPtr labelled = load_npy(named);
  EXPECT_EQ(labelled->class_names(), (std::vector<std::string>{"cat", "dog"}));
  EXPECT_TRUE(torch::equal(labelled->get_batch({3, 4, 5}).at("y"),
                           torch::tensor({1, 0, 1}, torch::kInt64)));

  NpzOptions missing;
  missing.paths = {dir + "/p_0.npz", dir + "/gone.npz"};
  EXPECT_TRUE(test::contains(config_error_of([&] { load_npz(missing); }),
                             "npz: paths: file '" + dir + "/gone.npz' does not exist"));
  NpzOptions short_of_y;
  short_of_y.path = dir + "/p_*.npz";
  EXPECT_TRUE(test::contains(config_error_of([&] { load_npz(short_of_y); }),
                             "npz: '" + dir + "/p_1.npz' has no array 'y' (arrays.y)"));
  NpzOptions nothing;
  nothing.path = dir + "/none_*.npz";
  EXPECT_TRUE(test::contains(config_error_of([&] { load_npz(nothing); }),
                             "npz: path '" + dir + "/none_*.npz' matches no file"));
}

TEST(ArrayNumClasses, DeclaredIsCheckedAsRowsAreRead) {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import numpy as np
np.save(d + 'x_0.npy', np.zeros((4, 2), np.float32))
np.save(d + 'x_1.npy', np.zeros((3, 2), np.float32))
np.save(d + 'y_0.npy', np.array([0, 1, 2, 3], np.uint8))
np.save(d + 'y_1.npy', np.array([2, 9, 1], np.uint8))
np.save(d + 'neg.npy', np.array([0, 1, -1, 3, 2, 0, 1], np.int16))
)");
  NpyOptions o = npy_shard_arrays(dir + "/x_*.npy", dir + "/y_*.npy");
  EXPECT_EQ(load_npy(o)->info().at("num_classes"), 10);  // not declared: the scan, as before
  o.num_classes = 12;
  DatasetPtr wide = load_npy(o);
  EXPECT_EQ(wide->info().at("num_classes"), 12);
  EXPECT_TRUE(torch::equal(wide->get_batch({5, 0}).at("y"), torch::tensor({9, 0}, torch::kUInt8)));
  o.num_classes = 4;
  DatasetPtr narrow = load_npy(o);  // not scanned: the labels are checked as read
  EXPECT_EQ(narrow->info().at("num_classes"), 4);
  EXPECT_TRUE(
      torch::equal(narrow->get_batch({0, 3, 6}).at("y"), torch::tensor({0, 3, 1}, torch::kUInt8)));
  EXPECT_TRUE(test::contains(config_error_of([&] {
                               narrow->get_batch({6, 5, 0});
                             }),
                             "npy: '" + dir +
                                 "/y_1.npy' row 1 (key y) holds label 9, not in [0, "
                                 "num_classes = 4): raise data.*.args.num_classes"));
  o.arrays[1].second = dir + "/neg.npy";
  o.arrays[0].second = dir + "/x_0.npy";
  EXPECT_TRUE(test::contains(config_error_of([&] { load_npy(o); }),
                             "'" + dir + "/neg.npy' (key y) has 7 rows but"));
  o.arrays.erase(o.arrays.begin());
  DatasetPtr negative = load_npy(o);
  EXPECT_TRUE(test::contains(config_error_of([&] {
                               negative->get_batch({4, 3, 2});
                             }),
                             "npy: '" + dir + "/neg.npy' row 2 (key y) holds label -1"));
}

TEST(ArrayNumClasses, LargeLabelsAreNotScannedUnlessDeclared) {
  const std::string dir = test::temp_dir();
  // 9 Mi int64 labels: 72 MiB, more than kScanLimitBytes, as a sparse file of zeros but the last.
  test::run_python(dir, R"(import numpy as np
y = np.lib.format.open_memmap(d + 'big.npy', mode='w+', dtype=np.int64, shape=(9 * 2**20,))
y[-1] = 5
y.flush()
np.save(d + 'small.npy', np.zeros(8 * 2**20, np.int64))
np.savez(d + 'big.npz', y=np.zeros(9 * 2**20, np.int64))
)");
  static_assert(kScanLimitBytes == int64_t(64) << 20, "the files above are sized around it");
  NpyOptions o;
  o.arrays = {{"y", dir + "/big.npy"}};
  EXPECT_TRUE(test::contains(config_error_of([&] { load_npy(o); }),
                             "npy: data.*.args.num_classes is not set and '" + dir +
                                 "/big.npy' (key y) holds 75497472 bytes of labels, more than "
                                 "the 64 MiB read to find the largest label: set num_classes"));
  o.num_classes = 6;
  DatasetPtr declared = load_npy(o);
  EXPECT_EQ(declared->info().at("num_classes"), 6);
  EXPECT_EQ(declared->get(9 * (1 << 20) - 1).at("y").item<int64_t>(), 5);
  o.num_classes = 5;
  EXPECT_TRUE(test::contains(config_error_of([&] { load_npy(o)->get(9 * (1 << 20) - 1); }),
                             "big.npy' row 9437183 (key y) holds label 5"));
  o = NpyOptions();
  o.arrays = {{"y", dir + "/small.npy"}};  // 64 MiB: scanned
  EXPECT_EQ(load_npy(o)->info().at("num_classes"), 1);
  NpzOptions z;
  z.path = dir + "/big.npz";
  EXPECT_TRUE(test::contains(config_error_of([&] { load_npz(z); }),
                             "npz: data.*.args.num_classes is not set and '" + dir +
                                 "/big.npz' array 'y' (key y) holds 75497472 bytes"));
  z.num_classes = 3;
  EXPECT_EQ(load_npz(z)->info().at("num_classes"), 3);
}

TEST(ArrayNumClasses, Hdf5RowsAreNamedByTheirFile) {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import h5py, numpy as np
with h5py.File(d + 'a.h5', 'w') as f:
    f['labels'] = np.array([0, 1, 2], np.int32)
with h5py.File(d + 'b.h5', 'w') as f:
    f['labels'] = np.array([1, 7], np.int32)
)");
  Hdf5Options o;
  o.paths = {dir + "/a.h5", dir + "/b.h5"};
  o.datasets = {{"y", "/labels"}};
  EXPECT_EQ(load_hdf5(o)->info().at("num_classes"), 8);
  o.num_classes = 3;
  DatasetPtr d = load_hdf5(o);
  EXPECT_EQ(d->info().at("num_classes"), 3);
  EXPECT_TRUE(torch::equal(d->get_batch({2, 3}).at("y"), torch::tensor({2, 1}, torch::kInt32)));
  EXPECT_TRUE(test::contains(config_error_of([&] {
                               d->get_batch({0, 4});
                             }),
                             "hdf5: '" + dir +
                                 "/b.h5' dataset '/labels' row 1 (key y) holds label 7, not in "
                                 "[0, num_classes = 3)"));
}

}  // namespace
}  // namespace unitrain
