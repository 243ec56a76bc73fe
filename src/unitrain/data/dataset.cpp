#include "unitrain/data/dataset.h"

#include <mutex>

#include "unitrain/data/csv_dataset.h"
#include "unitrain/data/hdf5_dataset.h"
#include "unitrain/data/idx_dataset.h"
#include "unitrain/data/image_folder_dataset.h"
#include "unitrain/data/instruct_dataset.h"
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
  return collate(examples, indices);
}

Registry<DatasetPtr>& dataset_registry() {
  static Registry<DatasetPtr> registry("dataset");
  return registry;
}

void register_builtin_datasets() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_builtin_transforms();
    register_csv_dataset();
    register_idx_dataset();
    register_text_chars_dataset();
    register_tokens_dataset();
    register_text_dataset();
    register_instruct_dataset();
    register_npy_datasets();
    register_hdf5_dataset();
    register_image_folder_dataset();
    register_synthetic_dataset();
  });
}

}  // namespace unitrain
