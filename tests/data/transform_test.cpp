// data.transforms and data.collate: each transform against LibTorch's own operators, the
// randomness a function of (seed, epoch, index), the collate functions, and the YAML path.
#include "unitrain/data/transform.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <set>

#include "data_test_util.h"
#include "unitrain/data/build_data.h"
#include "unitrain/data/loader.h"
#include "unitrain/data/tensor_dataset.h"

namespace unitrain {
namespace {

TransformPtr tf_transform(const std::string& yaml) {
  register_builtin_datasets();
  auto schema = std::make_shared<Schema>();
  schema->add("t", Type::Section).component("transform");
  return transform_registry().create(schema->resolve(Config::from_string("t: " + yaml)).at("t"));
}

CollatePtr tf_collate(const std::string& yaml) {
  register_builtin_datasets();
  auto schema = std::make_shared<Schema>();
  schema->add("c", Type::Section).component("collate");
  return collate_registry().create(schema->resolve(Config::from_string("c: " + yaml)).at("c"));
}

Batch tf_apply(const TransformPtr& t, const torch::Tensor& x, int64_t index = 0,
               int64_t epoch = 0) {
  Batch e{{"x", x}};
  SampleRng rng(ReadContext{7, epoch}, index);
  t->apply(e, rng);
  return e;
}

torch::Tensor tf_image(int64_t c, int64_t h, int64_t w) {
  return torch::arange(c * h * w, torch::kFloat32).reshape({c, h, w}) / 100.0;
}

TEST(SampleRng, AFunctionOfSeedEpochAndIndex) {
  SampleRng a(ReadContext{1, 2}, 3), b(ReadContext{1, 2}, 3);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(a.next(), b.next());
  const uint64_t first = SampleRng(ReadContext{1, 2}, 3).next();
  EXPECT_NE(first, SampleRng(ReadContext{1, 2}, 4).next());
  EXPECT_NE(first, SampleRng(ReadContext{1, 3}, 3).next());
  EXPECT_NE(first, SampleRng(ReadContext{2, 2}, 3).next());
  SampleRng r(ReadContext{5, 0}, 0);
  int64_t seen_low = 0, seen_high = 0;
  for (int i = 0; i < 2000; ++i) {
    const int64_t k = r.integer(-2, 2);
    ASSERT_GE(k, -2);
    ASSERT_LE(k, 2);
    seen_low += k == -2;
    seen_high += k == 2;
    const double u = r.uniform();
    ASSERT_TRUE(u >= 0 && u < 1);
  }
  EXPECT_GT(seen_low, 300);  // each of 5 values ~400 times
  EXPECT_GT(seen_high, 300);
}

TEST(ImageTransforms, RandomCropIsAWindowOfThePaddedImage) {
  const torch::Tensor x = tf_image(2, 6, 5);
  const torch::Tensor padded = torch::constant_pad_nd(x, {2, 2, 2, 2}, -1.0);
  auto t = tf_transform("{type: random_crop, args: {size: [4, 3], padding: 2, fill: -1}}");
  std::set<std::pair<int64_t, int64_t>> offsets;
  for (int64_t index = 0; index < 40; ++index) {
    const torch::Tensor out = tf_apply(t, x, index).at("x");
    ASSERT_EQ(out.sizes(), (std::vector<int64_t>{2, 4, 3}));
    bool found = false;
    for (int64_t top = 0; top + 4 <= 10 && !found; ++top) {
      for (int64_t left = 0; left + 3 <= 9 && !found; ++left) {
        if (torch::equal(out, padded.narrow(1, top, 4).narrow(2, left, 3))) {
          found = true;
          offsets.insert({top, left});
        }
      }
    }
    EXPECT_TRUE(found) << index;
    // The same example in the same epoch: the same crop.
    EXPECT_TRUE(torch::equal(out, tf_apply(t, x, index).at("x")));
  }
  EXPECT_GT(offsets.size(), 10u);  // the offsets vary with the index
  // A 2-D image stays 2-D.
  EXPECT_EQ(tf_apply(t, x[0], 1).at("x").dim(), 2);
  EXPECT_THROW(tf_apply(tf_transform("{type: random_crop, args: {size: [20]}}"), x), ConfigError);
}

TEST(ImageTransforms, CenterCropResizeFlipAndNormalizeMatchTorch) {
  const torch::Tensor x = tf_image(3, 7, 6);
  auto center = tf_transform("{type: center_crop, args: {size: [3, 4]}}");
  // torchvision: top = round((7 - 3) / 2) = 2, left = round((6 - 4) / 2) = 1.
  EXPECT_TRUE(torch::equal(tf_apply(center, x).at("x"), x.narrow(1, 2, 3).narrow(2, 1, 4)));
  auto resize = tf_transform("{type: resize, args: {size: [14, 3]}}");
  namespace F = torch::nn::functional;
  const torch::Tensor expected =
      F::interpolate(x.unsqueeze(0), F::InterpolateFuncOptions()
                                         .size(std::vector<int64_t>{14, 3})
                                         .mode(torch::kBilinear)
                                         .align_corners(false))
          .squeeze(0);
  EXPECT_TRUE(torch::allclose(tf_apply(resize, x).at("x"), expected));
  EXPECT_TRUE(
      torch::equal(tf_apply(tf_transform("{type: horizontal_flip, args: {p: 1}}"), x).at("x"),
                   torch::flip(x, {2})));
  EXPECT_TRUE(torch::equal(tf_apply(tf_transform("{type: vertical_flip, args: {p: 1}}"), x).at("x"),
                           torch::flip(x, {1})));
  EXPECT_TRUE(
      torch::equal(tf_apply(tf_transform("{type: horizontal_flip, args: {p: 0}}"), x).at("x"), x));
  auto norm = tf_transform("{type: normalize, args: {mean: [0.1, 0.2, 0.3], std: [0.5, 2, 4]}}");
  const torch::Tensor m = torch::tensor({0.1f, 0.2f, 0.3f}).view({3, 1, 1});
  const torch::Tensor s = torch::tensor({0.5f, 2.0f, 4.0f}).view({3, 1, 1});
  EXPECT_TRUE(torch::allclose(tf_apply(norm, x).at("x"), (x - m) / s, 1e-6, 1e-6));
  EXPECT_THROW(tf_transform("{type: normalize, args: {mean: [0.1], std: [0]}}"), ConfigError);
  EXPECT_THROW(tf_apply(norm, tf_image(2, 3, 3)), ConfigError);  // 3 values, 2 channels
  // The dataset's own tensor is never written to.
  const torch::Tensor before = x.clone();
  tf_apply(tf_transform("{type: horizontal_flip, args: {p: 1}}"), x);
  tf_apply(norm, x);
  EXPECT_TRUE(torch::equal(x, before));
}

TEST(ImageTransforms, RandomResizedCropAndRandomErasing) {
  const torch::Tensor x = tf_image(1, 8, 8);
  // The whole image at ratio 1: a resize.
  auto whole =
      tf_transform("{type: random_resized_crop, args: {size: [4], scale: [1, 1], ratio: [1, 1]}}");
  EXPECT_TRUE(
      torch::allclose(tf_apply(whole, x).at("x"),
                      tf_apply(tf_transform("{type: resize, args: {size: [4]}}"), x).at("x")));
  auto rrc = tf_transform("{type: random_resized_crop, args: {size: [5, 6]}}");
  std::set<double> firsts;
  for (int64_t i = 0; i < 20; ++i) {
    const torch::Tensor out = tf_apply(rrc, x, i).at("x");
    ASSERT_EQ(out.sizes(), (std::vector<int64_t>{1, 5, 6}));
    firsts.insert(out[0][0][0].item<double>());
  }
  EXPECT_GT(firsts.size(), 5u);
  auto erase = tf_transform("{type: random_erasing, args: {p: 1, value: -5}}");
  int erased_examples = 0;
  for (int64_t i = 0; i < 20; ++i) {
    const torch::Tensor out = tf_apply(erase, x + 1, i).at("x");
    const torch::Tensor hit = out == -5;
    const int64_t n = hit.sum().item<int64_t>();
    if (n == 0) continue;
    ++erased_examples;
    // One rectangle: its bounding box is all erased; the rest is untouched.
    const torch::Tensor rows = hit.any(2)[0].nonzero(), cols = hit.any(1)[0].nonzero();
    const int64_t h = rows.size(0), w = cols.size(0);
    EXPECT_EQ(n, h * w);
    EXPECT_TRUE(torch::equal(out.masked_select(~hit), (x + 1).masked_select(~hit)));
  }
  EXPECT_GT(erased_examples, 15);
}

TEST(SequenceTransforms, TruncateAndRandomWindowCutKeysAlike) {
  const torch::Tensor ids = torch::arange(10, torch::kInt64);
  Batch e{{"x", ids}, {"y", ids + 100}};
  SampleRng rng(ReadContext{1, 0}, 0);
  tf_transform("{type: truncate, args: {keys: [x, y], length: 4}}")->apply(e, rng);
  EXPECT_TRUE(torch::equal(e.at("x"), torch::arange(4, torch::kInt64)));
  EXPECT_TRUE(torch::equal(e.at("y"), torch::arange(4, torch::kInt64) + 100));
  auto window = tf_transform("{type: random_window, args: {keys: [x, y], length: 3}}");
  std::set<int64_t> starts;
  for (int64_t i = 0; i < 30; ++i) {
    Batch w{{"x", ids}, {"y", ids + 100}};
    SampleRng r(ReadContext{1, 0}, i);
    window->apply(w, r);
    ASSERT_EQ(w.at("x").size(0), 3);
    const int64_t start = w.at("x")[0].item<int64_t>();
    EXPECT_TRUE(torch::equal(w.at("x"), torch::arange(start, start + 3, torch::kInt64)));
    EXPECT_TRUE(torch::equal(w.at("y"), w.at("x") + 100));
    starts.insert(start);
  }
  EXPECT_GT(starts.size(), 4u);
  Batch bad{{"x", ids}, {"y", ids.narrow(0, 0, 5)}};
  EXPECT_THROW(window->apply(bad, rng), ConfigError);
}

TEST(Collate, PadsToTheLongestWithLabelsIgnoredAndAMask) {
  std::vector<Batch> examples{{{"x", torch::tensor({5, 6, 7}, torch::kInt64)},
                               {"y", torch::tensor({1, 2, 3})},
                               {"c", torch::tensor(4)}},
                              {{"x", torch::tensor({8}, torch::kInt64)},
                               {"y", torch::tensor({9})},
                               {"c", torch::tensor(2)}}};
  std::vector<SampleRng> rngs{SampleRng({}, 0), SampleRng({}, 1)};
  Batch b = tf_collate("{type: pad, args: {multiple_of: 2}}")->collate(examples, rngs);
  EXPECT_TRUE(torch::equal(b.at("x"), torch::tensor({{5, 6, 7, 0}, {8, 0, 0, 0}}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(b.at("y"), torch::tensor({{1, 2, 3, -100}, {9, -100, -100, -100}})));
  EXPECT_TRUE(torch::equal(b.at("attention_mask"),
                           torch::tensor({{1, 1, 1, 0}, {1, 0, 0, 0}}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(b.at("c"), torch::tensor({4, 2})));
  std::vector<Batch> odd{{{"x", torch::zeros({2, 3})}}, {{"x", torch::zeros({2, 4})}}};
  EXPECT_THROW(tf_collate("{type: pad}")->collate(odd, rngs), ConfigError);
}

TEST(Collate, MlmMasksFifteenPercentEightyTenTen) {
  // 400 sequences of 50 ids in [10, 110); id 3 is special, 0 pads.
  std::vector<Batch> examples;
  std::vector<SampleRng> rngs;
  torch::manual_seed(0);
  for (int64_t i = 0; i < 400; ++i) {
    torch::Tensor ids = torch::randint(10, 110, {50 - i % 7}, torch::kInt64);
    ids[0] = 3;
    examples.push_back({{"x", ids}});
    rngs.emplace_back(ReadContext{11, 2}, i);
  }
  auto mlm = tf_collate("{type: mlm, args: {mask_token_id: 1, vocab_size: 110, special_ids: [3]}}");
  std::vector<SampleRng> again = rngs;
  Batch b = mlm->collate(examples, rngs);
  Batch b2 = mlm->collate(examples, again);
  EXPECT_TRUE(torch::equal(b.at("x"), b2.at("x")));  // a function of (seed, epoch, index)
  const torch::Tensor x = b.at("x"), y = b.at("y"), mask = b.at("attention_mask");
  const torch::Tensor selected = y != -100;
  const double real = mask.sum().item<double>() - 400;  // not counting the specials
  const double share = selected.sum().item<double>() / real;
  EXPECT_NEAR(share, 0.15, 0.01);
  const double n = selected.sum().item<double>();
  EXPECT_NEAR((x.masked_select(selected) == 1).sum().item<double>() / n, 0.8, 0.02);
  const torch::Tensor kept = x.masked_select(selected) == y.masked_select(selected);
  EXPECT_NEAR(kept.sum().item<double>() / n, 0.1 + 0.1 / 110, 0.02);
  EXPECT_TRUE((x.select(1, 0) == 3).all().item<bool>());      // specials never selected
  EXPECT_FALSE((selected & (mask == 0)).any().item<bool>());  // nor padding
}

TEST(TransformedDataset, ReadsTheSameBitsInAnyThreadAndAfterAResume) {
  const torch::Tensor images = torch::rand({40, 1, 6, 6});
  auto inner = std::make_shared<TensorDataset>(Batch{{"x", images}, {"y", torch::arange(40)}});
  auto data = std::make_shared<TransformedDataset>(
      inner,
      std::vector<TransformPtr>{tf_transform("{type: random_crop, args: {size: [6], padding: 2}}"),
                                tf_transform("{type: horizontal_flip}")});
  EXPECT_FALSE(data->in_memory());
  auto epoch_batches = [&](int64_t workers, int64_t epoch, int64_t start) {
    Loader loader(data, LoaderOptions().batch_size(8).workers(workers).shuffle(false), 5, "t");
    std::vector<Batch> out;
    auto it = loader.epoch(epoch, start);
    while (auto b = it->next()) out.push_back(*b);
    return out;
  };
  const auto serial = epoch_batches(0, 1, 0), threaded = epoch_batches(2, 1, 0);
  const auto resumed = epoch_batches(2, 1, 2), other_epoch = epoch_batches(0, 2, 0);
  ASSERT_EQ(serial.size(), 5u);
  for (size_t b = 0; b < serial.size(); ++b) {
    EXPECT_TRUE(torch::equal(serial[b].at("x"), threaded[b].at("x"))) << b;
    if (b >= 2) EXPECT_TRUE(torch::equal(serial[b].at("x"), resumed[b - 2].at("x"))) << b;
  }
  // Another epoch: the same examples in the same order, other crops and flips.
  bool any_differs = false;
  for (size_t b = 0; b < serial.size(); ++b) {
    any_differs |= !torch::equal(serial[b].at("x"), other_epoch[b].at("x"));
  }
  EXPECT_TRUE(any_differs);
}

// Example i is a sequence of 1 + (i * 7) % 23 ids.
class RaggedSequences : public Dataset {
 public:
  int64_t size() const override { return 400; }
  Batch get(int64_t i) const override {
    return {{"x", torch::full({1 + (i * 7) % 23}, i, torch::kInt64)}};
  }
};

TEST(Loader, LengthBucketingGivesBatchesOfSimilarLengthsInASeededOrder) {
  auto data = std::make_shared<RaggedSequences>();
  auto spread = [&](const Loader& loader, int64_t epoch) {
    int64_t total = 0;
    std::vector<int64_t> order = loader.order(epoch);
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < 400; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
    for (size_t b = 0; b < order.size(); b += 8) {
      int64_t lo = 100, hi = 0;
      for (size_t k = b; k < std::min(order.size(), b + 8); ++k) {
        const int64_t len = data->get(order[k]).at("x").size(0);
        lo = std::min(lo, len);
        hi = std::max(hi, len);
      }
      total += hi - lo;
    }
    return total;
  };
  Loader plain(data, LoaderOptions().batch_size(8), 3, "t");
  Loader bucketed(data, LoaderOptions().batch_size(8).bucket_window(10), 3, "t");
  EXPECT_LT(spread(bucketed, 0) * 4, spread(plain, 0));
  EXPECT_EQ(bucketed.order(1), bucketed.order(1));
  EXPECT_NE(bucketed.order(1), bucketed.order(2));
  // Padded batches through the pad collate, read by the loader.
  auto padded = std::make_shared<TransformedDataset>(
      data, std::vector<TransformPtr>{}, tf_collate("{type: pad, args: {label_keys: []}}"));
  Loader loader(padded, LoaderOptions().batch_size(8).bucket_window(10), 3, "t");
  auto it = loader.epoch(0);
  auto first = it->next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->at("x").size(0), 8);
  EXPECT_EQ(first->at("attention_mask").sizes(), first->at("x").sizes());
  EXPECT_THROW(Loader(data, LoaderOptions().bucket_window(2).bucket_key("y"), 3, "t"), ConfigError);
}

TEST(TransformedDataset, BuiltFromTheDataSection) {
  const std::string dir = test::temp_dir();
  const Config data = Config::from_string(
      "train: {type: synthetic, args: {n: 32, features: 4}}\n"
      "transforms:\n"
      "  train: [{type: truncate, args: {keys: [x], length: 3}}]\n"
      "collate: {type: pad, args: {label_keys: []}}\n");
  DataSplits splits = build_data(data, 1);
  Batch b = splits.train->read_batch({0, 1}, ReadContext{1, 0});
  EXPECT_EQ(b.at("x").sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(b.has("attention_mask"));
  const Config bad =
      Config::from_string("train: {type: synthetic}\ntransforms: {train: [{type: random_flop}]}\n");
  const std::string message = test::config_error_of([&] { build_data(bad, 1); });
  EXPECT_NE(message.find("random_flop"), std::string::npos) << message;
  EXPECT_NE(message.find("random_crop"), std::string::npos) << message;  // the known names
}

}  // namespace
}  // namespace unitrain
