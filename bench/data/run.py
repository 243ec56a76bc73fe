"""bench/data: the per-example augmentation pipeline through unitrain's loader and through
PyTorch's DataLoader with torchvision's transforms, in one run; and the tokens dataset's
windows/s.

  /usr/bin/python3 bench/data/run.py BUILD_DIR [batches=600] [rounds=3]

The pipeline (Fashion-MNIST's 60000 training images as float32 [1, 28, 28] in [0, 1], the form
unitrain's idx dataset gives): pad 4 + random crop 28 + horizontal flip + normalize, batch 64,
shuffled. unitrain with 1 and 2 loader threads; PyTorch with 0 and 2 worker processes
(torch.set_num_threads(1) in each, as unitrain's loader threads run one intra-op thread).
Rounds alternate the four; medians are printed, and the ratio of unitrain's best to PyTorch's.
"""
import gzip
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torchvision.transforms as T

FASHION = "/usr/share/datasets/fashion-mnist"


def idx_images(path):
    with gzip.open(path) as f:
        data = f.read()
    n, h, w = (int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(3))
    return torch.from_numpy(np.frombuffer(data, np.uint8, offset=16).reshape(n, 1, h, w).copy())


class Images(torch.utils.data.Dataset):
    def __init__(self, images, labels, transform):
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.transform(self.images[i]), self.labels[i]


def init_worker(_):
    torch.set_num_threads(1)


def torch_rate(dataset, workers, batches):
    loader = torch.utils.data.DataLoader(dataset, batch_size=64, shuffle=True,
                                         num_workers=workers, worker_init_fn=init_worker,
                                         persistent_workers=workers > 0)
    it = iter(loader)
    for _ in range(20):
        next(it)
    start = time.perf_counter()
    seen = 0
    for _ in range(batches):
        try:
            x, _ = next(it)
        except StopIteration:
            it = iter(loader)
            x, _ = next(it)
        seen += len(x)
    return seen / (time.perf_counter() - start)


def unitrain_rate(build, what, threads, batches, *extra):
    out = subprocess.run([os.path.join(build, "bench", "bench_data_loader"), what, str(threads),
                          str(batches)] + list(extra), capture_output=True, text=True, check=True)
    line = next(l for l in out.stdout.splitlines() if l.startswith("samples_per_s "))
    return float(line.split()[1])


def main():
    build = sys.argv[1]
    batches = int(sys.argv[2]) if len(sys.argv) > 2 else 600
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    torch.set_num_threads(1)
    images = idx_images(os.path.join(FASHION, "train-images-idx3-ubyte.gz")).float() / 255
    labels = torch.zeros(len(images), dtype=torch.int64)
    transform = T.Compose([T.RandomCrop(28, padding=4), T.RandomHorizontalFlip(),
                           T.Normalize([0.2860], [0.3530])])
    dataset = Images(images, labels, transform)
    rates = {k: [] for k in ("unitrain 1 thread", "unitrain 2 threads", "DataLoader 0 workers",
                             "DataLoader 2 workers")}
    for _ in range(rounds):
        rates["unitrain 1 thread"].append(unitrain_rate(build, "pipeline", 1, batches))
        rates["unitrain 2 threads"].append(unitrain_rate(build, "pipeline", 2, batches))
        rates["DataLoader 0 workers"].append(torch_rate(dataset, 0, batches // 4))
        rates["DataLoader 2 workers"].append(torch_rate(dataset, 2, batches // 2))
    print("| loader | samples/s (median) | rounds |")
    print("|---|---|---|")
    med = {k: statistics.median(v) for k, v in rates.items()}
    for k, v in rates.items():
        print(f"| {k} | {med[k]:.0f} | {', '.join(f'{x:.0f}' for x in v)} |")
    best_u = max(med["unitrain 1 thread"], med["unitrain 2 threads"])
    best_t = max(med["DataLoader 0 workers"], med["DataLoader 2 workers"])
    print(f"unitrain's best / DataLoader's best: {best_u / best_t:.2f}x")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.bin")
        np.random.default_rng(0).integers(0, 50257, 20_000_000, dtype=np.uint16).tofile(path)
        for threads in (0, 1, 2):
            r = [unitrain_rate(build, "tokens", threads, batches, path) for _ in range(rounds)]
            print(f"tokens, seq_len 256, batch 64, {threads} loader threads: "
                  f"{statistics.median(r):.0f} windows/s ({', '.join(f'{x:.0f}' for x in r)})")


if __name__ == "__main__":
    main()
