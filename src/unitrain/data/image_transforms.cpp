// Image transforms of data.transforms: crops, flips, resizes, erasing and normalization of a
// float image [C, H, W] (or [H, W]) of each example, in plain loops over its pixels (a per-
// example chain of LibTorch operators costs more in dispatch than the pixels do).
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "unitrain/core/error.h"
#include "unitrain/core/options.h"
#include "unitrain/data/transform.h"

namespace unitrain {
namespace {

/// An example's image as a contiguous float32 [C, H, W]; `flat` records a [H, W] original.
struct ChwImage {
  torch::Tensor t;
  bool flat = false;
  int64_t c() const { return t.size(0); }
  int64_t h() const { return t.size(1); }
  int64_t w() const { return t.size(2); }
};

ChwImage chw_image_of(const Batch& example, const std::string& key, const char* who) {
  const torch::Tensor& t = example.at(key);
  UT_CHECK(t.dim() == 2 || t.dim() == 3, who, ": '", key,
           "' must be an image [C, H, W] or [H, W], got ", t.dim(), " dimensions");
  ChwImage img;
  img.flat = t.dim() == 2;
  torch::Tensor f = t.scalar_type() == torch::kFloat32 ? t : t.to(torch::kFloat32);
  img.t = (img.flat ? f.unsqueeze(0) : f).contiguous();
  return img;
}

void put_chw(Batch& example, const std::string& key, const ChwImage& like, torch::Tensor out) {
  example.set(key, like.flat ? out.squeeze(0) : std::move(out));
}

/// [h, w] from a `size` list of one (square) or two values; ConfigError naming `who`.
std::pair<int64_t, int64_t> hw_of_size(const std::vector<int64_t>& size, const char* who) {
  UT_CHECK(size.size() == 1 || size.size() == 2, who, ": size must be [S] or [H, W], got ",
           size.size(), " values");
  const int64_t h = size[0], w = size.size() == 2 ? size[1] : size[0];
  UT_CHECK(h > 0 && w > 0, who, ": size must be positive, got [", h, ", ", w, "]");
  return {h, w};
}

/// The window [top, top + h) x [left, left + w) of `img`, positions outside it set to `fill`.
torch::Tensor crop_window(const ChwImage& img, int64_t top, int64_t left, int64_t h, int64_t w,
                          float fill) {
  torch::Tensor out = torch::empty({img.c(), h, w}, torch::kFloat32);
  const float* src = img.t.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  const int64_t H = img.h(), W = img.w();
  // The columns of the window inside the image: [x0, x1) of the output.
  const int64_t x0 = std::clamp<int64_t>(-left, 0, w), x1 = std::clamp<int64_t>(W - left, x0, w);
  for (int64_t c = 0; c < img.c(); ++c) {
    for (int64_t y = 0; y < h; ++y) {
      float* row = dst + (c * h + y) * w;
      const int64_t sy = top + y;
      if (sy < 0 || sy >= H) {
        std::fill(row, row + w, fill);
        continue;
      }
      std::fill(row, row + x0, fill);
      if (x1 > x0)
        std::memcpy(row + x0, src + (c * H + sy) * W + left + x0, (x1 - x0) * sizeof(float));
      std::fill(row + x1, row + w, fill);
    }
  }
  return out;
}

// ---- normalize -----------------------------------------------------------------------------

struct NormalizeArgs {
  std::string key = "x";
  std::vector<double> mean;
  std::vector<double> stddev;
  static void declare(Options<NormalizeArgs>& o) {
    o.field("key", &NormalizeArgs::key).help("the image to normalize");
    o.field("mean", &NormalizeArgs::mean).required().help("one per channel, or one for all");
    o.field("std", &NormalizeArgs::stddev).required().help("one per channel, or one for all");
  }
};

class NormalizeImage : public Transform {
 public:
  explicit NormalizeImage(const NormalizeArgs& a) : a_(a) {
    UT_CHECK(!a.mean.empty() && a.mean.size() == a.stddev.size(),
             "normalize: mean and std must "
             "have the same number of values (one per channel), got ",
             a.mean.size(), " and ", a.stddev.size());
    for (double s : a.stddev) UT_CHECK(s > 0, "normalize: std values must be > 0, got ", s);
  }
  void apply(Batch& e, SampleRng&) const override {
    ChwImage img = chw_image_of(e, a_.key, "normalize");
    const size_t n = a_.mean.size();
    UT_CHECK(n == 1 || static_cast<int64_t>(n) == img.c(), "normalize: ", n,
             " mean/std values for an image of ", img.c(), " channels");
    torch::Tensor out = torch::empty_like(img.t);
    const int64_t plane = img.h() * img.w();
    const float* src = img.t.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t c = 0; c < img.c(); ++c) {
      const auto m = static_cast<float>(a_.mean[n == 1 ? 0 : c]);
      const auto inv = static_cast<float>(1.0 / a_.stddev[n == 1 ? 0 : c]);
      for (int64_t i = c * plane; i < (c + 1) * plane; ++i) dst[i] = (src[i] - m) * inv;
    }
    put_chw(e, a_.key, img, out);
  }

 private:
  NormalizeArgs a_;
};

// ---- random_crop, center_crop -----------------------------------------------------------------

struct CropArgs {
  std::string key = "x";
  std::vector<int64_t> size;
  int64_t padding = 0;
  double fill = 0;
  static void declare(Options<CropArgs>& o) {
    o.field("key", &CropArgs::key).help("the image to crop");
    o.field("size", &CropArgs::size).required().help("[S] (square) or [H, W] of the crop");
    o.field("padding", &CropArgs::padding).min(0).help("pixels added on every side first");
    o.field("fill", &CropArgs::fill).help("the value of the added pixels");
  }
};

class RandomCrop : public Transform {
 public:
  explicit RandomCrop(const CropArgs& a) : a_(a) { hw_of_size(a.size, "random_crop"); }
  void apply(Batch& e, SampleRng& rng) const override {
    ChwImage img = chw_image_of(e, a_.key, "random_crop");
    const auto [h, w] = hw_of_size(a_.size, "random_crop");
    const int64_t p = a_.padding;
    UT_CHECK(h <= img.h() + 2 * p && w <= img.w() + 2 * p, "random_crop: a crop of [", h, ", ", w,
             "] does not fit an image of [", img.h(), ", ", img.w(), "] padded by ", p);
    const int64_t top = rng.integer(0, img.h() + 2 * p - h) - p;
    const int64_t left = rng.integer(0, img.w() + 2 * p - w) - p;
    put_chw(e, a_.key, img, crop_window(img, top, left, h, w, static_cast<float>(a_.fill)));
  }

 private:
  CropArgs a_;
};

class CenterCrop : public Transform {
 public:
  explicit CenterCrop(const CropArgs& a) : a_(a) { hw_of_size(a.size, "center_crop"); }
  void apply(Batch& e, SampleRng&) const override {
    ChwImage img = chw_image_of(e, a_.key, "center_crop");
    const auto [h, w] = hw_of_size(a_.size, "center_crop");
    // torchvision's offsets: round((H - h) / 2); a crop larger than the image pads with fill.
    const auto top = static_cast<int64_t>(std::lround((img.h() - h) / 2.0));
    const auto left = static_cast<int64_t>(std::lround((img.w() - w) / 2.0));
    put_chw(e, a_.key, img, crop_window(img, top, left, h, w, static_cast<float>(a_.fill)));
  }

 private:
  CropArgs a_;
};

// ---- resize -----------------------------------------------------------------------------------

struct ResizeArgs {
  std::string key = "x";
  std::vector<int64_t> size;
  static void declare(Options<ResizeArgs>& o) {
    o.field("key", &ResizeArgs::key).help("the image to resize");
    o.field("size", &ResizeArgs::size).required().help("[S] (square) or [H, W]; bilinear");
  }
};

class ResizeImage : public Transform {
 public:
  explicit ResizeImage(const ResizeArgs& a) : a_(a) { hw_of_size(a.size, "resize"); }
  void apply(Batch& e, SampleRng&) const override {
    ChwImage img = chw_image_of(e, a_.key, "resize");
    const auto [h, w] = hw_of_size(a_.size, "resize");
    put_chw(e, a_.key, img, resize_image(img.t, h, w));
  }

 private:
  ResizeArgs a_;
};

// ---- horizontal_flip, vertical_flip ----------------------------------------------------------

struct FlipArgs {
  std::string key = "x";
  double p = 0.5;
  static void declare(Options<FlipArgs>& o) {
    o.field("key", &FlipArgs::key).help("the image to flip");
    o.field("p", &FlipArgs::p).min(0).max(1).help("probability of flipping an example");
  }
};

class FlipImage : public Transform {
 public:
  FlipImage(const FlipArgs& a, bool horizontal) : a_(a), horizontal_(horizontal) {}
  void apply(Batch& e, SampleRng& rng) const override {
    if (!rng.chance(a_.p)) return;
    ChwImage img = chw_image_of(e, a_.key, horizontal_ ? "horizontal_flip" : "vertical_flip");
    torch::Tensor out = torch::empty_like(img.t);
    const int64_t H = img.h(), W = img.w();
    const float* src = img.t.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t c = 0; c < img.c(); ++c) {
      for (int64_t y = 0; y < H; ++y) {
        const float* s = src + (c * H + (horizontal_ ? y : H - 1 - y)) * W;
        float* d = dst + (c * H + y) * W;
        if (horizontal_) {
          for (int64_t x = 0; x < W; ++x) d[x] = s[W - 1 - x];
        } else {
          std::memcpy(d, s, W * sizeof(float));
        }
      }
    }
    put_chw(e, a_.key, img, out);
  }

 private:
  FlipArgs a_;
  bool horizontal_;
};

// ---- random_resized_crop, random_erasing -------------------------------------------------------

struct AreaArgs {
  std::string key = "x";
  std::vector<int64_t> size;  ///< random_resized_crop's output
  std::vector<double> scale;  ///< the share of the area, [min, max]
  std::vector<double> ratio;  ///< the aspect ratio w / h, [min, max]
  double p = 0.5;             ///< random_erasing's probability
  double value = 0;           ///< random_erasing's fill
};

void check_area_range(const std::vector<double>& r, const char* who, const char* name) {
  UT_CHECK(r.size() == 2 && r[0] > 0 && r[0] <= r[1], who, ": ", name,
           " must be [min, max] with 0 < min <= max, got ", option_detail::yaml_text(r));
}

/// A window of `img` covering a random share in `scale` of its area with an aspect ratio in
/// `ratio` (log-uniform), as torchvision draws them: up to 10 tries. Returns false when none
/// fits.
bool random_area_window(const ChwImage& img, const AreaArgs& a, SampleRng& rng, int64_t& top,
                        int64_t& left, int64_t& h, int64_t& w, bool strictly_inside) {
  const double area = static_cast<double>(img.h() * img.w());
  const double log_lo = std::log(a.ratio[0]), log_hi = std::log(a.ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.uniform(a.scale[0], a.scale[1]);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    w = std::lround(std::sqrt(target * aspect));
    h = std::lround(std::sqrt(target / aspect));
    const bool fits = strictly_inside ? (h < img.h() && w < img.w())
                                      : (0 < w && w <= img.w() && 0 < h && h <= img.h());
    if (fits && h > 0 && w > 0) {
      top = rng.integer(0, img.h() - h);
      left = rng.integer(0, img.w() - w);
      return true;
    }
  }
  return false;
}

class RandomResizedCrop : public Transform {
 public:
  explicit RandomResizedCrop(const AreaArgs& a) : a_(a) {
    hw_of_size(a.size, "random_resized_crop");
    check_area_range(a.scale, "random_resized_crop", "scale");
    check_area_range(a.ratio, "random_resized_crop", "ratio");
  }
  void apply(Batch& e, SampleRng& rng) const override {
    ChwImage img = chw_image_of(e, a_.key, "random_resized_crop");
    const auto [oh, ow] = hw_of_size(a_.size, "random_resized_crop");
    int64_t top = 0, left = 0, h = img.h(), w = img.w();
    if (!random_area_window(img, a_, rng, top, left, h, w, false)) {
      // torchvision's fallback: the largest centred window whose ratio is within range.
      const double r = double(img.w()) / double(img.h());
      h = img.h();
      w = img.w();
      if (r < a_.ratio[0]) {
        h = std::lround(w / a_.ratio[0]);
      } else if (r > a_.ratio[1]) {
        w = std::lround(h * a_.ratio[1]);
      }
      top = (img.h() - h) / 2;
      left = (img.w() - w) / 2;
    }
    put_chw(e, a_.key, img, resize_image(crop_window(img, top, left, h, w, 0), oh, ow));
  }

 private:
  AreaArgs a_;
};

class RandomErasing : public Transform {
 public:
  explicit RandomErasing(const AreaArgs& a) : a_(a) {
    check_area_range(a.scale, "random_erasing", "scale");
    check_area_range(a.ratio, "random_erasing", "ratio");
  }
  void apply(Batch& e, SampleRng& rng) const override {
    if (!rng.chance(a_.p)) return;
    ChwImage img = chw_image_of(e, a_.key, "random_erasing");
    int64_t top = 0, left = 0, h = 0, w = 0;
    if (!random_area_window(img, a_, rng, top, left, h, w, true)) return;
    torch::Tensor out = img.t.clone();
    float* d = out.data_ptr<float>();
    const auto v = static_cast<float>(a_.value);
    for (int64_t c = 0; c < img.c(); ++c) {
      for (int64_t y = top; y < top + h; ++y) {
        float* row = d + (c * img.h() + y) * img.w() + left;
        std::fill(row, row + w, v);
      }
    }
    put_chw(e, a_.key, img, out);
  }

 private:
  AreaArgs a_;
};

Options<AreaArgs> resized_crop_args() {
  Options<AreaArgs> o;
  using A = AreaArgs;
  o.field("key", &A::key).help("the image to crop");
  o.field("size", &A::size).required().help("[S] (square) or [H, W] of the output");
  o.field("scale", &A::scale).def("[0.08, 1.0]").help("share of the image's area, [min, max]");
  o.field("ratio", &A::ratio)
      .def("[0.75, 1.3333333]")
      .help("aspect ratio w / h, [min, max], drawn log-uniform");
  return o;
}

Options<AreaArgs> erasing_args() {
  Options<AreaArgs> o;
  using A = AreaArgs;
  o.field("key", &A::key).help("the image to erase a rectangle of");
  o.field("p", &A::p).min(0).max(1).help("probability of erasing an example");
  o.field("scale", &A::scale).def("[0.02, 0.33]").help("share of the image's area, [min, max]");
  o.field("ratio", &A::ratio).def("[0.3, 3.3]").help("aspect ratio, [min, max], log-uniform");
  o.field("value", &A::value).help("the erased pixels' value");
  return o;
}

}  // namespace

torch::Tensor resize_image(const torch::Tensor& chw, int64_t h, int64_t w) {
  if (chw.size(1) == h && chw.size(2) == w) return chw;
  namespace F = torch::nn::functional;
  return F::interpolate(chw.unsqueeze(0), F::InterpolateFuncOptions()
                                              .size(std::vector<int64_t>{h, w})
                                              .mode(torch::kBilinear)
                                              .align_corners(false))
      .squeeze(0)
      .contiguous();
}

namespace detail {

void register_image_transforms() {
  auto& r = transform_registry();
  r.add<NormalizeArgs>(
      "normalize", "(x - mean) / std per channel of an image",
      [](const NormalizeArgs& a) -> TransformPtr { return std::make_shared<NormalizeImage>(a); });
  r.add<CropArgs>(
      "random_crop", "a random window of an image, after padding it",
      [](const CropArgs& a) -> TransformPtr { return std::make_shared<RandomCrop>(a); });
  r.add<CropArgs>(
      "center_crop", "the centred window of an image (padded with fill if larger)",
      [](const CropArgs& a) -> TransformPtr { return std::make_shared<CenterCrop>(a); });
  r.add<ResizeArgs>(
      "resize", "an image resized (bilinear, no antialiasing)",
      [](const ResizeArgs& a) -> TransformPtr { return std::make_shared<ResizeImage>(a); });
  r.add<FlipArgs>(
      "horizontal_flip", "an image mirrored left-right with probability p",
      [](const FlipArgs& a) -> TransformPtr { return std::make_shared<FlipImage>(a, true); });
  r.add<FlipArgs>(
      "vertical_flip", "an image mirrored top-bottom with probability p",
      [](const FlipArgs& a) -> TransformPtr { return std::make_shared<FlipImage>(a, false); });
  r.add("random_resized_crop",
        "a random window (share of the area, aspect ratio) resized to size (torchvision's)",
        resized_crop_args(),
        [](const AreaArgs& a) -> TransformPtr { return std::make_shared<RandomResizedCrop>(a); });
  r.add("random_erasing", "a random rectangle of an image set to value, with probability p",
        erasing_args(),
        [](const AreaArgs& a) -> TransformPtr { return std::make_shared<RandomErasing>(a); });
}

}  // namespace detail
}  // namespace unitrain
