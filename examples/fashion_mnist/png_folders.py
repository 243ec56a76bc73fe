#!/usr/bin/python3
"""Writes Fashion-MNIST's test set (Debian's dataset-fashion-mnist: 10,000 images of 28x28) as image
files in one folder per class, the layout of torchvision's ImageFolder and unitrain's image_folder:

  OUT/Ankle_boot/00000.png ... OUT/Trouser/09999.png        (the number is the image's index)

  /usr/bin/python3 examples/fashion_mnist/png_folders.py [OUT]   (default examples/data/generated/fashion-mnist-png)

--format jpeg writes JPEG files instead (quality 90), --rgb 3-channel images, --size S images
resized to SxS (the benchmark in bench/data uses them), --limit N only the first N images.
Needs python3-numpy and python3-pil."""
import argparse
import gzip
import os

import numpy as np
from PIL import Image

FASHION = "/usr/share/datasets/fashion-mnist"
CLASSES = ["T-shirt_top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
           "Bag", "Ankle_boot"]  # label i of the IDX file is CLASSES[i]


def read_idx(name, header):
    with gzip.open(os.path.join(FASHION, name)) as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=header)


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", nargs="?", default=os.path.join(root, "examples/data/generated/fashion-mnist-png"))
    p.add_argument("--format", choices=["png", "jpeg"], default="png")
    p.add_argument("--rgb", action="store_true", help="write RGB images (the gray copied 3 times)")
    p.add_argument("--size", type=int, default=28, help="resize to SIZE x SIZE (bilinear)")
    p.add_argument("--limit", type=int, default=0, help="only the first N images (0 = all)")
    a = p.parse_args()
    images = read_idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)
    labels = read_idx("t10k-labels-idx1-ubyte.gz", 8)
    count = a.limit or len(labels)
    done = os.path.join(a.out, ".complete")  # a hidden file: image_folder skips it
    settings = f"{a.format} rgb={a.rgb} size={a.size} count={count}\n"
    if os.path.exists(done) and open(done).read() == settings:
        print(f"{a.out}: already written")
        return
    if os.path.exists(a.out) and os.listdir(a.out):
        raise SystemExit(f"{a.out} exists and holds other files: remove it or give another folder")
    for name in CLASSES:
        os.makedirs(os.path.join(a.out, name), exist_ok=True)
    ext = "png" if a.format == "png" else "jpg"
    for i in range(count):
        im = Image.fromarray(images[i], "L")
        if a.rgb:
            im = im.convert("RGB")
        if a.size != 28:
            im = im.resize((a.size, a.size), Image.BILINEAR)
        path = os.path.join(a.out, CLASSES[labels[i]], f"{i:05d}.{ext}")
        im.save(path, quality=90) if a.format == "jpeg" else im.save(path)
    with open(done, "w") as f:
        f.write(settings)
    print(f"{a.out}: {count} images in {len(CLASSES)} class folders")


if __name__ == "__main__":
    main()
