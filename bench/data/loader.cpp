// bench/data: samples/s of unitrain's loader on a per-example augmentation pipeline, and
// windows/s of the tokens dataset. bench/data/run.py runs it beside PyTorch's DataLoader.
//   build/bench/bench_data_loader pipeline THREADS BATCHES   (Fashion-MNIST train images:
//       pad 4 + random crop 28 + horizontal flip + normalize, batch 64)
//   build/bench/bench_data_loader tokens THREADS BATCHES FILE  (uint16 windows of 256, batch 64)
//   build/bench/bench_data_loader image_folder THREADS BATCHES ROOT CHANNELS  (PNG/JPEG files
//       in class folders decoded to float32 [CHANNELS, H, W], batch 64; bench/data/image_folder.py)
// Prints one line: `samples_per_s N` (examples or windows per second over BATCHES batches,
// after a warm-up of 20 batches).
#include "unitrain/data/loader.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "unitrain/core/config.h"
#include "unitrain/data/build_data.h"

namespace {

using Clock = std::chrono::steady_clock;

const char* kPipeline = R"(
train:
  type: idx
  args: {images: /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz,
         labels: /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz}
transforms:
  train:
    - {type: random_crop, args: {size: [28], padding: 4}}
    - {type: horizontal_flip}
    - {type: normalize, args: {mean: [0.2860], std: [0.3530]}}
)";

double samples_per_second(const unitrain::DatasetPtr& data, int64_t threads, int64_t batches) {
  unitrain::Loader loader(data, unitrain::LoaderOptions().batch_size(64).workers(threads), 1,
                          "bench");
  const int64_t warmup = 20;
  auto it = loader.epoch(0);
  int64_t seen = 0;
  Clock::time_point start;
  for (int64_t b = 0; b < warmup + batches; ++b) {
    if (b == warmup) start = Clock::now();
    auto batch = it->next();
    if (!batch) {  // another epoch when the first is used up
      it = loader.epoch(b);
      batch = it->next();
    }
    if (b >= warmup) seen += batch->size();
  }
  return double(seen) / std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s pipeline|tokens|image_folder THREADS BATCHES [TOKEN_FILE | ROOT "
                 "CHANNELS]\n",
                 argv[0]);
    return 2;
  }
  const std::string what = argv[1];
  const int64_t threads = std::stoll(argv[2]), batches = std::stoll(argv[3]);
  torch::set_num_threads(1);
  std::string yaml = kPipeline;
  if (what == "tokens") {
    if (argc < 5) return 2;
    yaml = std::string("train: {type: tokens, args: {path: ") + argv[4] + ", seq_len: 256}}\n";
  }
  if (what == "image_folder") {
    if (argc < 6) return 2;
    yaml = std::string("train: {type: image_folder, args: {root: ") + argv[4] +
           ", channels: " + argv[5] + "}}\n";
  }
  const unitrain::DataSplits data = unitrain::build_data(unitrain::Config::from_string(yaml), 1);
  std::printf("samples_per_s %.0f\n", samples_per_second(data.train, threads, batches));
  return 0;
}
