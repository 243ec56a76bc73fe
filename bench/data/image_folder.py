"""bench/data: decoding JPEG files in class folders — unitrain's image_folder dataset through its
loader against torchvision's datasets.ImageFolder through PyTorch's DataLoader, on the same files.

  /usr/bin/python3 bench/data/image_folder.py BUILD_DIR [rounds=3]

The files: Fashion-MNIST's 10,000 test images written as JPEG (quality 90) by
examples/fashion_mnist/png_folders.py, twice: 28x28 gray and 64x64 RGB (resized), into a temporary
folder (page-cached after the first read, as a dataset that fits in memory is). Both sides decode
every file to float32 [C, H, W] in [0, 1] (torchvision: PIL's open + convert + ToTensor), batch 64,
shuffled. unitrain with 1 and 2 loader threads; PyTorch with 0 and 2 worker processes
(torch.set_num_threads(1) in each). Rounds alternate the four; medians are printed in images/s.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torchvision
import torchvision.transforms as T
from PIL import Image

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BATCHES = 150  # about one epoch of 10,000 images


def init_worker(_):
    torch.set_num_threads(1)


def torch_rate(root, mode, workers):
    dataset = torchvision.datasets.ImageFolder(
        root, transform=T.ToTensor(), loader=lambda path: Image.open(path).convert(mode))
    loader = torch.utils.data.DataLoader(dataset, batch_size=64, shuffle=True, num_workers=workers,
                                         worker_init_fn=init_worker, persistent_workers=workers > 0)
    it = iter(loader)
    for _ in range(20):
        next(it)
    start = time.perf_counter()
    seen = 0
    for _ in range(BATCHES):
        try:
            x, _ = next(it)
        except StopIteration:
            it = iter(loader)
            x, _ = next(it)
        seen += len(x)
    return seen / (time.perf_counter() - start)


def unitrain_rate(build, root, channels, threads):
    out = subprocess.run([os.path.join(build, "bench", "bench_data_loader"), "image_folder",
                          str(threads), str(BATCHES), root, str(channels)],
                         capture_output=True, text=True, check=True)
    line = next(l for l in out.stdout.splitlines() if l.startswith("samples_per_s "))
    return float(line.split()[1])


def main():
    build = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    torch.set_num_threads(1)
    script = os.path.join(SOURCE, "examples", "fashion_mnist", "png_folders.py")
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra, mode, channels in (("28x28 gray", [], "L", 1),
                                            ("64x64 RGB", ["--rgb", "--size", "64"], "RGB", 3)):
            root = os.path.join(tmp, name.replace(" ", "-"))
            subprocess.run(["/usr/bin/python3", script, root, "--format", "jpeg"] + extra,
                           check=True, capture_output=True)
            rates = {k: [] for k in ("unitrain, 1 loader thread", "unitrain, 2 loader threads",
                                     "DataLoader, 0 workers", "DataLoader, 2 worker processes")}
            for _ in range(rounds):
                rates["unitrain, 1 loader thread"].append(unitrain_rate(build, root, channels, 1))
                rates["unitrain, 2 loader threads"].append(unitrain_rate(build, root, channels, 2))
                rates["DataLoader, 0 workers"].append(torch_rate(root, mode, 0))
                rates["DataLoader, 2 worker processes"].append(torch_rate(root, mode, 2))
            print(f"\n{name} JPEG, 10000 files, batch 64:\n")
            print("| loader | images/s (median) | rounds |")
            print("|---|---|---|")
            med = {k: statistics.median(v) for k, v in rates.items()}
            for k, v in rates.items():
                print(f"| {k} | {med[k]:.0f} | {', '.join(f'{x:.0f}' for x in v)} |")
            best_u = max(v for k, v in med.items() if k.startswith("unitrain"))
            best_t = max(v for k, v in med.items() if k.startswith("DataLoader"))
            print(f"\nunitrain's best / DataLoader's best: {best_u / best_t:.2f}x")


if __name__ == "__main__":
    main()
