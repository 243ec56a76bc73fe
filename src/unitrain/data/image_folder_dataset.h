#pragma once
// The `image_folder` dataset: root/<class>/*.png|jpg|jpeg (torchvision's ImageFolder layout).
#include <string>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/data/dataset.h"

namespace unitrain {

/// Settings of the `image_folder` dataset (its `args`).
struct ImageFolderOptions {
  std::string root;           ///< the folder holding one folder per class
  int64_t channels = 3;       ///< 1: gray, 3: RGB; images are converted as needed
  std::vector<int64_t> size;  ///< [S] or [H, W]: resized when decoded (bilinear); [] = as stored

  static void declare(Options<ImageFolderOptions>& o);
};

/// Images in one folder per class: the classes are the folders of `root` sorted by name (the
/// class index is the position), the examples the .png, .jpg and .jpeg files in them (and
/// their subfolders; extensions in any case) sorted by path, class by class. Names starting
/// with '.' are skipped. Examples: `x` float32 [C, H, W] in [0, 1], `y` int64 []. Each get()
/// reads and decodes its file (decode_image) in the calling loader thread; nothing is shared
/// between threads but the immutable file list. ConfigError when built: `root` missing or
/// not a folder, no class folder, a class folder without images; when read: a file that
/// cannot be read or decoded (naming it and the library's reason); a batch of images of
/// different sizes (naming two files and their sizes, and the fixes).
class ImageFolderDataset : public Dataset {
 public:
  explicit ImageFolderDataset(const ImageFolderOptions& options);

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  Batch get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  /// num_classes and channels; height and width with `size`.
  std::map<std::string, int64_t> info() const override;
  std::vector<std::string> class_names() const override { return classes_; }

  /// Example `index`'s file, as found under root.
  std::string path(int64_t index) const;

 private:
  struct File {
    std::string relative;  // to root_
    int64_t label;
  };
  std::string root_;
  int64_t channels_;
  int64_t height_ = 0, width_ = 0;  // 0: as stored
  std::vector<std::string> classes_;
  std::vector<File> files_;
};

/// Registers dataset `image_folder` (its name, help, args and factory) in dataset_registry();
/// register_builtin_datasets() calls it.
void register_image_folder_dataset();

}  // namespace unitrain
