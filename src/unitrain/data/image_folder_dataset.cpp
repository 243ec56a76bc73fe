#include "unitrain/data/image_folder_dataset.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "unitrain/core/error.h"
#include "unitrain/core/file_bytes.h"
#include "unitrain/data/formats/image_codec.h"
#include "unitrain/data/transform.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

bool is_image_file_name(const std::string& name) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = name.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == "png" || ext == "jpg" || ext == "jpeg";
}

bool is_hidden_folder_entry(const fs::path& p) { return p.filename().string().rfind('.', 0) == 0; }

/// The image files under `dir` (its subfolders too, following links), relative to `root`,
/// sorted; hidden files and folders (a leading '.') skipped.
std::vector<std::string> image_files_under(const fs::path& dir, const fs::path& root) {
  std::vector<std::string> out;
  std::error_code ec;
  auto it =
      fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink, ec);
  UT_CHECK(!ec, "image_folder: cannot list '", dir.string(), "': ", ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    UT_CHECK(!ec, "image_folder: cannot list '", dir.string(), "': ", ec.message());
    if (is_hidden_folder_entry(it->path())) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec) && is_image_file_name(it->path().filename().string())) {
      out.push_back(it->path().lexically_relative(root).string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// The whole file `path`; ConfigError naming it when it cannot be read (removed since the
/// dataset was built, no permission, an I/O error).
std::string read_image_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  UT_CHECK(f != nullptr, "image_folder: cannot open '", path, "': ", std::strerror(errno));
  std::string bytes;
  char buffer[1 << 16];
  size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof(buffer), f.get())) > 0) bytes.append(buffer, got);
  UT_CHECK(!std::ferror(f.get()), "image_folder: cannot read '", path, "': ", std::strerror(errno));
  return bytes;
}

/// `image`'s samples as float32 [C, H, W] in [0, 1].
torch::Tensor chw_floats_of(const DecodedImage& image) {
  const int64_t c = image.channels, h = image.height, w = image.width, plane = h * w;
  torch::Tensor out = torch::empty({c, h, w}, torch::kFloat32);
  float* dst = out.data_ptr<float>();
  // A division, not a multiplication by 1/255: the float nearest to value/255, as
  // torchvision's ToTensor and the idx dataset give.
  auto spread = [&](const auto* src, float scale) {
    for (int64_t i = 0; i < plane; ++i) {
      for (int64_t k = 0; k < c; ++k)
        dst[k * plane + i] = static_cast<float>(src[i * c + k]) / scale;
    }
  };
  if (image.bits == 16) {
    spread(reinterpret_cast<const uint16_t*>(image.samples.data()), 65535.0f);
  } else {
    spread(image.samples.data(), 255.0f);
  }
  return out;
}

std::string class_list_preview(const std::vector<std::string>& classes) {
  std::string out;
  const size_t shown = std::min<size_t>(classes.size(), 10);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + classes[i];
  if (shown < classes.size()) out += ", ...";
  return out;
}

}  // namespace

void ImageFolderOptions::declare(Options<ImageFolderOptions>& o) {
  using O = ImageFolderOptions;
  o.field("root", &O::root)
      .required()
      .help(
          "the folder of class folders: root/<class>/*.png|jpg|jpeg; relative to the current "
          "directory");
  o.field("channels", &O::channels)
      .min(1)
      .max(3)
      .help("1: gray, 3: RGB; images are converted as needed");
  o.field("size", &O::size)
      .help(
          "[S] or [H, W]: every image resized to it when decoded (bilinear, as the resize "
          "transform); [] = as stored (then a batch needs images of one size)");
}

ImageFolderDataset::ImageFolderDataset(const ImageFolderOptions& options)
    : root_(options.root), channels_(options.channels) {
  UT_CHECK(channels_ == 1 || channels_ == 3, "image_folder: channels must be 1 or 3, got ",
           channels_);
  if (!options.size.empty()) {
    UT_CHECK(options.size.size() <= 2, "image_folder: size must be [S] or [H, W], got ",
             options.size.size(), " values");
    height_ = options.size[0];
    width_ = options.size.back();
    UT_CHECK(height_ > 0 && width_ > 0, "image_folder: size must be positive, got [", height_, ", ",
             width_, "]");
  }
  std::error_code ec;
  if (!fs::exists(root_, ec)) require_file(root_, "image_folder root");  // says where from
  UT_CHECK(fs::is_directory(root_, ec), "image_folder: root '", root_,
           "' is a file, not a folder of class folders");
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    if (entry.is_directory(ec) && !is_hidden_folder_entry(entry.path())) {
      classes_.push_back(entry.path().filename().string());
    }
  }
  UT_CHECK(!ec, "image_folder: cannot list root '", root_, "': ", ec.message());
  if (classes_.empty()) {
    const bool loose = !image_files_under(root_, root_).empty();
    throw ConfigError(detail::concat(
        "image_folder: root '", root_,
        "' holds no class folders: put each class's images in "
        "a folder of its own, root/<class>/*.png|jpg|jpeg",
        loose ? " (its images are directly in root: move them into class folders)" : ""));
  }
  std::sort(classes_.begin(), classes_.end());
  std::vector<std::string> empty;
  for (size_t k = 0; k < classes_.size(); ++k) {
    for (std::string& f : image_files_under(fs::path(root_) / classes_[k], root_)) {
      files_.push_back({std::move(f), static_cast<int64_t>(k)});
    }
    if (files_.empty() || files_.back().label != static_cast<int64_t>(k)) {
      empty.push_back("'" + classes_[k] + "'");
    }
  }
  if (!empty.empty()) {
    std::string names;
    for (const auto& e : empty) names += (names.empty() ? "" : ", ") + e;
    throw ConfigError(detail::concat(
        "image_folder: ", empty.size() == 1 ? "class folder " : "class folders ", names, " of '",
        root_, "' hold", empty.size() == 1 ? "s" : "", " no .png, .jpg or .jpeg image; remove ",
        empty.size() == 1 ? "it" : "them", " or add images (every folder of root is a class)"));
  }
  spdlog::info("image_folder {}: {} images in {} classes ({})", root_, files_.size(),
               classes_.size(), class_list_preview(classes_));
}

std::string ImageFolderDataset::path(int64_t index) const {
  return (fs::path(root_) / files_[static_cast<size_t>(index)].relative).string();
}

Batch ImageFolderDataset::get(int64_t index) const {
  UT_CHECK(index >= 0 && index < size(), "image_folder: example index ", index,
           " is out of range [0, ", size(), ")");
  const std::string file = path(index);
  const DecodedImage image =
      decode_image(read_image_file(file), channels_, "image_folder: '" + file + "'");
  torch::Tensor x = chw_floats_of(image);
  if (height_ > 0) x = resize_image(x, height_, width_);
  return {{"x", x}, {"y", torch::tensor(files_[static_cast<size_t>(index)].label, torch::kInt64)}};
}

Batch ImageFolderDataset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<Batch> examples;
  examples.reserve(indices.size());
  for (int64_t i : indices) {
    examples.push_back(get(i));
    const torch::Tensor& first = examples.front().at("x");
    const torch::Tensor& x = examples.back().at("x");
    if (x.sizes() == first.sizes()) continue;
    throw ConfigError(detail::concat(
        "image_folder: images of different sizes in one batch: '", path(indices.front()), "' is ",
        first.sizes(), " and '", path(i), "' is ", x.sizes(),
        " ([C, H, W]); give image_folder a size ([H, W]: every image resized when decoded), "
        "or add a resize, center_crop or random_resized_crop to data.transforms"));
  }
  return collate(examples);
}

std::map<std::string, int64_t> ImageFolderDataset::info() const {
  std::map<std::string, int64_t> out{{"num_classes", static_cast<int64_t>(classes_.size())},
                                     {"channels", channels_}};
  if (height_ > 0) {
    out["height"] = height_;
    out["width"] = width_;
  }
  return out;
}

void register_image_folder_dataset() {
  dataset_registry().add<ImageFolderOptions>(
      "image_folder",
      "PNG and JPEG images in one folder per class (torchvision's ImageFolder), decoded in the "
      "loader threads: x float32 [C, H, W] in [0, 1], y int64 class index",
      [](const ImageFolderOptions& o) -> DatasetPtr {
        return std::make_shared<ImageFolderDataset>(o);
      });
}

}  // namespace unitrain
