// The image_folder dataset on PNG and JPEG files written by Debian's python3-pil, checked
// against PIL's own decode of the same files.
#include "unitrain/data/image_folder_dataset.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "data_test_util.h"
#include "test_util.h"
#include "unitrain/data/build_data.h"
#include "unitrain/data/transform.h"

namespace unitrain {
namespace {

using test::config_error_of;

ImageFolderOptions folder_of(const std::string& root, int64_t channels = 3,
                             std::vector<int64_t> size = {}) {
  ImageFolderOptions o;
  o.root = root;
  o.channels = channels;
  o.size = std::move(size);
  return o;
}

/// The bytes of `path` (a .raw file PIL's script wrote with ndarray.tobytes()) as a tensor of
/// `shape`, uint8 or int32 (from uint16).
torch::Tensor raw_pixels(const std::string& path, std::vector<int64_t> shape, bool wide = false) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  const std::string s = bytes.str();
  torch::Tensor t =
      torch::from_blob(const_cast<char*>(s.data()), shape, wide ? torch::kInt16 : torch::kUInt8)
          .clone();
  return wide ? t.to(torch::kInt32).bitwise_and(0xFFFF) : t;
}

/// PIL's [H, W, C] pixels as our [C, H, W] floats in [0, 1].
torch::Tensor as_chw(const torch::Tensor& hwc, double scale = 255.0) {
  return hwc.to(torch::kFloat64).div(scale).permute({2, 0, 1}).to(torch::kFloat32);
}

/// root/<class>/... with every PNG mode PIL writes, from one 5x7 RGB picture, and the pixels
/// PIL decodes from each file as gray ('L') and RGB in <file>.L.raw and <file>.RGB.raw.
std::string write_png_modes() {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import numpy as np, os
from PIL import Image
os.makedirs(d + 'pngs/modes')
rng = np.random.default_rng(3)
rgb = Image.fromarray(rng.integers(0, 256, (5, 7, 3), dtype=np.uint8), 'RGB')
rgba = rgb.copy(); rgba.putalpha(Image.fromarray(rng.integers(0, 256, (5, 7), dtype=np.uint8)))
pal = rgb.quantize(colors=9); pal.info['transparency'] = 2
files = {'a_rgb.png': rgb, 'b_rgba.png': rgba, 'c_gray.png': rgb.convert('L'),
         'd_la.png': rgba.convert('LA'), 'e_palette.png': pal, 'f_bilevel.png': rgb.convert('1')}
for name, im in files.items():
    im.save(d + 'pngs/modes/' + name)
    back = Image.open(d + 'pngs/modes/' + name)
    for mode in ('L', 'RGB'):
        with open(d + name + '.' + mode + '.raw', 'wb') as f:
            f.write(np.asarray(back.convert(mode)).tobytes())
wide = rng.integers(0, 65536, (5, 7), dtype=np.uint16)
Image.fromarray(wide).save(d + 'pngs/modes/g_gray16.png')
assert Image.open(d + 'pngs/modes/g_gray16.png').mode in ('I;16', 'I')
with open(d + 'g_gray16.png.raw', 'wb') as f:
    f.write(wide.astype('<u2').tobytes())
)");
  return dir;
}

TEST(ImageFolderDataset, PngPixelsAreExactlyPils) {
  const std::string dir = write_png_modes();
  for (int64_t channels : {1, 3}) {
    ImageFolderDataset d(folder_of(dir + "/pngs", channels));
    ASSERT_EQ(d.size(), 7);
    const char* names[] = {"a_rgb.png", "b_rgba.png",    "c_gray.png",
                           "d_la.png",  "e_palette.png", "f_bilevel.png"};
    for (int64_t i = 0; i < 6; ++i) {
      SCOPED_TRACE(std::string(names[i]) + ", channels " + std::to_string(channels));
      EXPECT_EQ(d.path(i), dir + "/pngs/modes/" + names[i]);
      const std::string raw = dir + "/" + names[i] + (channels == 1 ? ".L.raw" : ".RGB.raw");
      torch::Tensor expected = as_chw(raw_pixels(raw, {5, 7, channels}));
      Batch e = d.get(i);
      EXPECT_EQ(e.at("x").sizes(), torch::IntArrayRef({channels, 5, 7}));
      EXPECT_EQ(e.at("x").scalar_type(), torch::kFloat32);
      EXPECT_TRUE(torch::equal(e.at("x"), expected)) << e.at("x") << expected;
      EXPECT_EQ(e.at("y").item<int64_t>(), 0);
    }
    // 16 bits kept: value / 65535.
    torch::Tensor wide = raw_pixels(dir + "/g_gray16.png.raw", {5, 7, 1}, true);
    torch::Tensor expected = as_chw(wide, 65535.0).expand({channels, 5, 7});
    EXPECT_TRUE(torch::equal(d.get(6).at("x"), expected));
  }
}

TEST(ImageFolderDataset, JpegPixelsMatchPilsDecode) {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import numpy as np, os
from PIL import Image
os.makedirs(d + 'jpgs/photos')
y, x = np.mgrid[0:24, 0:32]
rgb = np.stack([x * 8, y * 10, (x + y) * 4], axis=-1).astype(np.uint8)
Image.fromarray(rgb).save(d + 'jpgs/photos/a.jpg', quality=90)
Image.fromarray(rgb).convert('L').save(d + 'jpgs/photos/b.JPEG', quality=90)
for name in ('a.jpg', 'b.JPEG'):
    back = Image.open(d + 'jpgs/photos/' + name)
    for mode in ('L', 'RGB'):
        with open(d + name + '.' + mode + '.raw', 'wb') as f:
            f.write(np.asarray(back.convert(mode)).tobytes())
)");
  for (int64_t channels : {1, 3}) {
    ImageFolderDataset d(folder_of(dir + "/jpgs", channels));
    ASSERT_EQ(d.size(), 2);
    for (int64_t i = 0; i < 2; ++i) {
      const std::string name = i == 0 ? "a.jpg" : "b.JPEG";
      SCOPED_TRACE(name + ", channels " + std::to_string(channels));
      torch::Tensor expected = as_chw(raw_pixels(
          dir + "/" + name + (channels == 1 ? ".L.raw" : ".RGB.raw"), {24, 32, channels}));
      torch::Tensor x = d.get(i).at("x");
      ASSERT_EQ(x.sizes(), expected.sizes());
      // The same libjpeg-turbo decodes both; gray from a color JPEG is its luma, where PIL
      // converts the decoded RGB: within 2 levels.
      const double tolerance = channels == 1 && i == 0 ? 2.5 / 255 : 0.5 / 255;
      EXPECT_LE((x - expected).abs().max().item<double>(), tolerance);
    }
  }
}

TEST(ImageFolderDataset, ClassesSortedFilesSortedHiddenAndOtherFilesSkipped) {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import os
from PIL import Image
for path in ['zebra/2.png', 'zebra/10.PNG', 'ant/sub/b.jpeg', 'ant/a.Jpg', 'cat/x.png',
             '.hidden/h.png', 'cat/.skip/s.png']:
    os.makedirs(os.path.dirname(d + 'root/' + path), exist_ok=True)
    Image.new('L', (3, 2), 7).save(d + 'root/' + path, 'PNG' if 'png' in path.lower() else 'JPEG')
open(d + 'root/cat/notes.txt', 'w').write('not an image')
open(d + 'root/cat/._x.png', 'w').write('AppleDouble, not an image')
open(d + 'root/readme.md', 'w').write('a file of root: not a class')
)");
  ImageFolderDataset d(folder_of(dir + "/root/", 1));
  EXPECT_EQ(d.class_names(), (std::vector<std::string>{"ant", "cat", "zebra"}));
  ASSERT_EQ(d.size(), 5);
  const std::vector<std::string> files = {"ant/a.Jpg", "ant/sub/b.jpeg", "cat/x.png",
                                          "zebra/10.PNG", "zebra/2.png"};
  const std::vector<int64_t> labels = {0, 0, 1, 2, 2};
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(std::filesystem::path(d.path(i)).lexically_relative(dir + "/root").string(),
              files[static_cast<size_t>(i)]);
    EXPECT_EQ(d.get(i).at("y").item<int64_t>(), labels[static_cast<size_t>(i)]);
  }
  Batch b = d.get_batch({4, 0, 2});
  EXPECT_EQ(b.at("x").sizes(), torch::IntArrayRef({3, 1, 2, 3}));
  EXPECT_TRUE(torch::equal(b.at("y"), torch::tensor({2, 0, 1}, torch::kInt64)));
  EXPECT_EQ(d.info(), (std::map<std::string, int64_t>{{"num_classes", 3}, {"channels", 1}}));
  EXPECT_FALSE(d.in_memory());
}

/// root/{big,small}/ with one 8x6 and one 4x3 RGB PNG.
std::string write_two_sizes() {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import os, numpy as np
from PIL import Image
for cls, (w, h) in (('big', (8, 6)), ('small', (4, 3))):
    os.makedirs(d + 'root/' + cls)
    a = (np.arange(w * h * 3) * 5 % 256).astype(np.uint8).reshape(h, w, 3)
    Image.fromarray(a).save(d + 'root/' + cls + '/img.png')
)");
  return dir + "/root";
}

TEST(ImageFolderDataset, ImagesOfDifferentSizesNeedSizeOrATransform) {
  register_builtin_transforms();  // by name, as a run's data.transforms (each test runs alone)
  const std::string root = write_two_sizes();
  ImageFolderDataset as_stored(folder_of(root));
  EXPECT_EQ(as_stored.get(0).at("x").sizes(), torch::IntArrayRef({3, 6, 8}));
  const std::string error = config_error_of([&] { as_stored.get_batch({0, 1}); });
  EXPECT_TRUE(
      test::contains(error, "image_folder: images of different sizes in one batch: '" + root +
                                "/big/img.png' is [3, 6, 8] and '" + root +
                                "/small/img.png' is [3, 3, 4] ([C, H, W]); give image_folder "
                                "a size"))
      << error;
  EXPECT_TRUE(test::contains(error,
                             "add a resize, center_crop or random_resized_crop to "
                             "data.transforms"))
      << error;

  // size: resized when decoded, as the resize transform does.
  ImageFolderDataset resized(folder_of(root, 3, {5, 4}));
  Batch b = resized.get_batch({0, 1});
  EXPECT_EQ(b.at("x").sizes(), torch::IntArrayRef({2, 3, 5, 4}));
  EXPECT_TRUE(torch::equal(b.at("x")[1], resize_image(as_stored.get(1).at("x"), 5, 4)));
  EXPECT_EQ(resized.info().at("height"), 5);
  EXPECT_EQ(resized.info().at("width"), 4);
  ImageFolderDataset square(folder_of(root, 3, {4}));
  EXPECT_EQ(square.get(0).at("x").sizes(), torch::IntArrayRef({3, 4, 4}));

  // Through a transform that leaves the sizes as they are, the stack collate says what to do.
  TransformedDataset flipped(std::make_shared<ImageFolderDataset>(folder_of(root)),
                             {transform_registry().create(
                                 Config::from_string("{type: horizontal_flip, args: {p: 1.0}}"))});
  const std::string stack_error = config_error_of([&] { flipped.get_batch({0, 1}); });
  EXPECT_TRUE(test::contains(stack_error,
                             "[3, 6, 8] (the dataset's example 0) vs [3, 3, 4] (the dataset's "
                             "example 1); images of "
                             "different sizes are batched after resizing or cropping them "
                             "to one size: add a resize, center_crop or "
                             "random_resized_crop to data.transforms"))
      << stack_error;
}

TEST(ImageFolderDataset, LoaderThreadsDecodeAtOnce) {
  const std::string dir = write_png_modes();
  test::run_python(dir, R"(import numpy as np
from PIL import Image
y, x = np.mgrid[0:5, 0:7]
Image.fromarray(np.stack([x * 30, y * 40, x * y * 5], -1).astype(np.uint8)).save(
    d + 'pngs/modes/h.jpg', quality=80)
)");
  ImageFolderDataset d(folder_of(dir + "/pngs"));
  std::vector<torch::Tensor> serial;
  for (int64_t i = 0; i < d.size(); ++i) serial.push_back(d.get(i).at("x"));
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 100; ++k) {
        const int64_t i = (k * 5 + t) % d.size();
        if (!torch::equal(d.get(i).at("x"), serial[static_cast<size_t>(i)])) ++wrong[t];
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

TEST(ImageFolderDataset, BadFoldersAreErrorsWhenBuilt) {
  const std::string dir = test::temp_dir();
  EXPECT_TRUE(test::contains(config_error_of([&] { ImageFolderDataset(folder_of(dir + "/nope")); }),
                             "image_folder root: file '" + dir + "/nope' does not exist"));
  test::write_file(dir + "/file", "x");
  EXPECT_EQ(config_error_of([&] { ImageFolderDataset(folder_of(dir + "/file")); }),
            "image_folder: root '" + dir + "/file' is a file, not a folder of class folders");
  test::write_file(dir + "/flat/a.png", "x");
  EXPECT_EQ(config_error_of([&] { ImageFolderDataset(folder_of(dir + "/flat")); }),
            "image_folder: root '" + dir +
                "/flat' holds no class folders: put each class's images in a folder of its own, "
                "root/<class>/*.png|jpg|jpeg (its images are directly in root: move them into "
                "class folders)");
  test::write_file(dir + "/some/cat/a.png", "x");
  test::write_file(dir + "/some/dog/a.txt", "x");
  test::write_file(dir + "/some/eel/.a.png", "x");
  EXPECT_EQ(config_error_of([&] { ImageFolderDataset(folder_of(dir + "/some")); }),
            "image_folder: class folders 'dog', 'eel' of '" + dir +
                "/some' hold no .png, .jpg or .jpeg image; remove them or add images (every "
                "folder of root is a class)");
  EXPECT_EQ(config_error_of([&] { ImageFolderDataset(folder_of(dir + "/some", 2)); }),
            "image_folder: channels must be 1 or 3, got 2");
  EXPECT_EQ(config_error_of([&] {
              ImageFolderDataset(folder_of(dir + "/some", 3, {0, 4}));
            }),
            "image_folder: size must be positive, got [0, 4]");
}

TEST(ImageFolderDataset, UndecodableFilesAreErrorsNamingThemWhenRead) {
  const std::string dir = test::temp_dir();
  test::run_python(dir, R"(import io, os
from PIL import Image
os.makedirs(d + 'root/c')
for fmt, ext in (('PNG', 'png'), ('JPEG', 'jpg')):
    b = io.BytesIO(); Image.new('RGB', (64, 48), (9, 99, 199)).save(b, fmt)
    data = b.getvalue()
    open(d + 'root/c/%s_truncated.%s' % (fmt, ext), 'wb').write(data[:len(data) // 2])
    flipped = bytearray(data); flipped[60] ^= 0xff
    if fmt == 'JPEG':  # a flipped byte in a table decodes to other pixels: break the markers
        flipped[4:40] = bytes(36)
    open(d + 'root/c/%s_corrupt.%s' % (fmt, ext), 'wb').write(bytes(flipped))
open(d + 'root/c/text.png', 'w').write('hello, world')
Image.new('RGB', (4, 4)).save(d + 'root/c/png_named.jpg', 'PNG')  # decodes: read from its bytes
open(d + 'root/c/empty.jpg', 'w').write('')
b = io.BytesIO(); Image.new('CMYK', (4, 4)).save(b, 'JPEG')
open(d + 'root/c/cmyk.jpg', 'wb').write(b.getvalue())
)");
  ImageFolderDataset d(folder_of(dir + "/root"));
  std::map<std::string, std::string> errors;
  for (int64_t i = 0; i < d.size(); ++i) {
    errors[std::filesystem::path(d.path(i)).filename().string()] =
        config_error_of([&] { d.get(i); });
  }
  const std::string at = "image_folder: '" + dir + "/root/c/";
  EXPECT_EQ(errors["text.png"], at + "text.png': neither a PNG nor a JPEG file (it starts with "
                                     "bytes 68 65 6c 6c 6f 2c 20 77)");
  EXPECT_EQ(errors["png_named.jpg"], "(no error)");
  EXPECT_EQ(errors["empty.jpg"], at + "empty.jpg': the file is empty");
  EXPECT_EQ(errors["cmyk.jpg"], at + "cmyk.jpg': a CMYK JPEG, which image_folder does not "
                                     "decode; convert it to RGB (e.g. PIL's "
                                     "Image.open(f).convert('RGB').save(f))");
  EXPECT_TRUE(test::contains(errors["PNG_truncated.png"],
                             at + "PNG_truncated.png': not a valid PNG file (libpng: "))
      << errors["PNG_truncated.png"];
  EXPECT_TRUE(
      test::contains(errors["PNG_corrupt.png"], at + "PNG_corrupt.png': not a valid PNG file "
                                                     "(libpng: "))
      << errors["PNG_corrupt.png"];
  EXPECT_TRUE(test::contains(errors["JPEG_truncated.jpg"],
                             at + "JPEG_truncated.jpg': not a valid JPEG file (libjpeg-turbo: "))
      << errors["JPEG_truncated.jpg"];
  EXPECT_TRUE(test::contains(errors["JPEG_corrupt.jpg"], at + "JPEG_corrupt.jpg': "))
      << errors["JPEG_corrupt.jpg"];
  EXPECT_TRUE(test::contains(errors["JPEG_corrupt.jpg"], "(libjpeg-turbo: "))
      << errors["JPEG_corrupt.jpg"];
  // A file removed after the dataset was built.
  std::filesystem::remove(dir + "/root/c/text.png");
  std::string removed;
  for (int64_t i = 0; i < d.size(); ++i) {
    if (test::contains(d.path(i), "text.png")) removed = config_error_of([&] { d.get(i); });
  }
  EXPECT_EQ(removed,
            "image_folder: cannot open '" + dir + "/root/c/text.png': No such file or directory");
}

TEST(ImageFolderDataset, FromConfigClassesThroughSplitsAndSplitsMustAgree) {
  register_builtin_datasets();
  const std::string root = write_two_sizes();
  const std::string args = "{root: " + root + ", size: [4, 4]}";
  DataSplits s = build_data(Config(Config::from_string("train: {type: image_folder, args: " + args +
                                                       "}\nvalidation_ratio: 0.5\n"
                                                       "transforms: {train: [{type: "
                                                       "horizontal_flip}]}")
                                       .node(),
                                   "data"),
                            1);
  EXPECT_EQ(s.train->class_names(), (std::vector<std::string>{"big", "small"}));
  EXPECT_EQ(s.val->class_names(), (std::vector<std::string>{"big", "small"}));
  EXPECT_EQ(s.train->info().at("num_classes"), 2);

  const std::string other = write_two_sizes();
  std::filesystem::rename(other + "/small", other + "/tiny");
  const std::string error = config_error_of([&] {
    build_data(
        Config(Config::from_string("train: {type: image_folder, args: " + args +
                                   "}\nval: {type: image_folder, args: {root: " + other + "}}")
                   .node(),
               "data"),
        1);
  });
  EXPECT_EQ(error,
            "data.val: its classes differ from data.train's (2 and 2 classes; class 1 is "
            "'small' in train and 'tiny' in val), so a class index would not mean the "
            "same class: give both splits the same class folders");
  EXPECT_TRUE(test::contains(
      config_error_of([&] {
        build_data(Config(Config::from_string("train: {type: image_folder, args: {root: " + root +
                                              ", channels: 2}}")
                              .node(),
                          "data"),
                   1);
      }),
      "channels"));
}

}  // namespace
}  // namespace unitrain
