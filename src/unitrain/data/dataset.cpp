#include "unitrain/data/dataset.h"

#include <mutex>

#include "unitrain/data/csv_dataset.h"
#include "unitrain/data/hdf5_dataset.h"
#include "unitrain/data/idx_dataset.h"
#include "unitrain/data/image_folder_dataset.h"
#include "unitrain/data/npy_dataset.h"
#include "unitrain/data/synthetic_dataset.h"
#include "unitrain/data/text_chars_dataset.h"
#include "unitrain/data/text_dataset.h"
#include "unitrain/data/tokens_dataset.h"
#include "unitrain/data/transform.h"

namespace unitrain {

Batch Dataset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<Batch> examples;
  examples.reserve(indices.size());
  for (int64_t i : indices) examples.push_back(get(i));
  return collate(examples);
}

Registry<DatasetPtr>& dataset_registry() {
  static Registry<DatasetPtr> registry("dataset");
  return registry;
}

void register_builtin_datasets() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_builtin_transforms();
    auto& r = dataset_registry();
    r.add<CsvOptions>("csv",
                      "numeric columns of a CSV file (.gz too): x float32 [F], y class or float",
                      load_csv);
    r.add<IdxOptions>(
        "idx", "MNIST-style IDX images + labels (.gz too): x float32 [1, H, W] in [0, 1], y int64",
        [](const IdxOptions& o) -> DatasetPtr { return std::make_shared<IdxDataset>(o); });
    r.add<TextCharsOptions>(
        "text_chars",
        "a text file as a byte-level LM stream: x, y int64 [seq_len], y = x shifted by one",
        [](const TextCharsOptions& o) -> DatasetPtr {
          return std::make_shared<TextCharsDataset>(o);
        });
    r.add<TokensOptions>(
        "tokens",
        "a flat file of uint16/uint32 token ids (nanoGPT's train.bin), memory-mapped: x, y int64 "
        "[seq_len], y = x shifted by one",
        [](const TokensOptions& o) -> DatasetPtr { return std::make_shared<TokensDataset>(o); });
    r.add<TextOptions>(
        "text",
        "lines or JSON Lines of text, tokenised by a SentencePiece model in the loader threads: "
        "x (and y for lm) int64 [L] of varying length",
        [](const TextOptions& o) -> DatasetPtr { return std::make_shared<TextDataset>(o); });
    r.add<NpyOptions>("npy",
                      "NumPy .npy files, one per batch key, memory-mapped: each key's rows, "
                      "dtype kept or converted",
                      load_npy);
    r.add<NpzOptions>("npz",
                      "the arrays of a NumPy .npz archive (np.savez, compressed too): each key's "
                      "rows, dtype kept or converted",
                      load_npz);
    r.add<Hdf5Options>("hdf5",
                       "datasets of HDF5 files (h5py), concatenated over files and read row by "
                       "row: each key's rows, dtype kept or converted",
                       load_hdf5);
    r.add<ImageFolderOptions>(
        "image_folder",
        "PNG and JPEG images in one folder per class (torchvision's ImageFolder), decoded in the "
        "loader threads: x float32 [C, H, W] in [0, 1], y int64 class index",
        [](const ImageFolderOptions& o) -> DatasetPtr {
          return std::make_shared<ImageFolderDataset>(o);
        });
    r.add<SyntheticOptions>(
        "synthetic",
        "seeded random learnable data: classification (y int64) or regression (y float32)",
        make_synthetic);
  });
}

}  // namespace unitrain
