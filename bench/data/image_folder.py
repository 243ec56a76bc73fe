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

import torch
import torchvision
import torchvision.transforms as T
from PIL import Image

from run import torch_rate, unitrain_rate  # bench/data/run.py: the same loops, timed the same way

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BATCHES = 150  # about one epoch of 10,000 images


def image_folder(root, mode):
    """torchvision's ImageFolder decoding each file with PIL, as float32 [C, H, W] in [0, 1]."""
    return torchvision.datasets.ImageFolder(
        root, transform=T.ToTensor(), loader=lambda path: Image.open(path).convert(mode))


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
            dataset = image_folder(root, mode)
            rates = {k: [] for k in ("unitrain, 1 loader thread", "unitrain, 2 loader threads",
                                     "DataLoader, 0 workers", "DataLoader, 2 worker processes")}
            args = (root, str(channels))
            for _ in range(rounds):
                for threads, key in ((1, "unitrain, 1 loader thread"),
                                     (2, "unitrain, 2 loader threads")):
                    rates[key].append(unitrain_rate(build, "image_folder", threads, BATCHES, *args))
                for workers, key in ((0, "DataLoader, 0 workers"),
                                     (2, "DataLoader, 2 worker processes")):
                    rates[key].append(torch_rate(dataset, workers, BATCHES))
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
