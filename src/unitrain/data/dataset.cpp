#include "unitrain/data/dataset.h"

#include <mutex>

#include "unitrain/data/csv_dataset.h"
#include "unitrain/data/idx_dataset.h"
#include "unitrain/data/synthetic_dataset.h"
#include "unitrain/data/text_chars_dataset.h"

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
    auto& r = dataset_registry();
    r.add("csv", "numeric columns of a CSV file (.gz too): x float32 [F], y class or float",
          CsvOptions::schema(),
          [](const Config& args) { return load_csv(CsvOptions::from_config(args)); });
    r.add("idx",
          "MNIST-style IDX images + labels (.gz too): x float32 [1, H, W] in [0, 1], y int64",
          IdxOptions::schema(), [](const Config& args) -> DatasetPtr {
            return std::make_shared<IdxDataset>(IdxOptions::from_config(args));
          });
    r.add("text_chars",
          "a text file as a byte-level LM stream: x, y int64 [seq_len], y = x shifted by one",
          TextCharsOptions::schema(), [](const Config& args) -> DatasetPtr {
            return std::make_shared<TextCharsDataset>(TextCharsOptions::from_config(args));
          });
    r.add("synthetic",
          "seeded random learnable data: classification (y int64) or regression (y float32)",
          SyntheticOptions::schema(),
          [](const Config& args) { return make_synthetic(SyntheticOptions::from_config(args)); });
  });
}

}  // namespace unitrain
