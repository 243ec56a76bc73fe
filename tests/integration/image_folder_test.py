"""The image_folder dataset through the real binary: examples/fashion_mnist's PNG folders train the
CNN and the run names its classes; PNG and JPEG files written by Debian's python3-pil decode to
PIL's pixels; bad folders and files are errors naming them (exit 2)."""
import json
import os
import signal
import subprocess
import time

import yaml

import common
from common import run, write, read_jsonl

CLASSES = ["Ankle_boot", "Bag", "Coat", "Dress", "Pullover", "Sandal", "Shirt", "Sneaker",
           "T-shirt_top", "Trouser"]  # png_folders.py's folders, sorted


def mini_config(directory, root, extra=""):
    """A run on `root` (RGB images of 16x20): a small CNN, one test-mode step."""
    return write(os.path.join(directory, "mini.yaml"), f"""
name: mini
model: {{type: cnn, args: {{in_channels: 3, image_size: [16, 20], channels: [4], hidden: 8, classes: 2}}}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: image_folder, args: {{root: {root}}}}}
  loader: {{batch_size: 4, workers: 2}}
train: {{max_length: 1 epochs, threads: 1}}
{extra}""")


class ImageFolder(common.Case):
    def test_fashion_png_folders_train_the_cnn_and_the_run_names_the_classes(self):
        root = os.path.join(self.dir, "png")
        subprocess.run(["/usr/bin/python3",
                        os.path.join(common.SOURCE, "examples/fashion_mnist/png_folders.py"), root],
                       check=True, timeout=300)
        self.assertEqual(sorted(os.listdir(root)), [".complete"] + CLASSES)
        run_dir = os.path.join(self.dir, "run")
        # Two epochs of the example on one intra-op thread (ctest runs tests side by side).
        code, out = run(["train", "examples/fashion_mnist/image_folder.yaml",
                         "--data.train.args.root", root, "--run_dir", run_dir,
                         "--train.max_length", "2 epochs", "--train.threads", "1"],
                        cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        self.assertIn(f"image_folder {root}: 10000 images in 10 classes (Ankle_boot, Bag, Coat, "
                      "Dress, Pullover, Sandal, Shirt, Sneaker, T-shirt_top, Trouser)", out)
        events = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
        accuracy = [e["val/acc"] for e in events if "val/acc" in e]
        # (Chance is 0.1; measured 0.795 after 2 epochs with the Feistel data order.)
        self.assertGreater(accuracy[-1], 0.77, accuracy)
        with open(os.path.join(run_dir, "classes.json")) as f:
            self.assertEqual(json.load(f), {"classes": CLASSES})

    def test_png_and_jpeg_decode_to_pils_pixels(self):
        # The run's config.yaml holds data.normalize's per-channel mean and std, computed from
        # the decoded train images: compare them with the same statistics of PIL's decode.
        import numpy as np
        from PIL import Image
        rng = np.random.default_rng(5)
        y, x = np.mgrid[0:16, 0:20]
        smooth = np.stack([x * 12, y * 15, (x + y) * 7], axis=-1)
        pixels = []
        for fmt, ext in (("PNG", "png"), ("JPEG", "jpg")):
            root = os.path.join(self.dir, fmt)
            for i in range(6):
                noise = rng.integers(0, 256, (16, 20, 3)) if fmt == "PNG" else rng.integers(0, 30, (16, 20, 3))
                image = Image.fromarray(np.clip(smooth + noise, 0, 255).astype(np.uint8))
                path = os.path.join(root, "ab"[i % 2], f"{i}.{ext}")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                image.save(path, **({"quality": 85} if fmt == "JPEG" else {}))
                pixels.append(np.asarray(Image.open(path).convert("RGB")))
            decoded = (np.stack(pixels[-6:]).astype(np.float32) / np.float32(255)).astype(np.float64)
            run_dir = os.path.join(self.dir, "run-" + fmt)
            code, out = run(["train", mini_config(self.dir, root), "--data.normalize.enabled", "true",
                             "--run_dir", run_dir, "--train.test_mode", "true"])
            self.assertEqual(code, 0, out)
            with open(os.path.join(run_dir, "config.yaml")) as f:
                text = f.read()
            norm = yaml.safe_load(text)["data"]["normalize"]
            np.testing.assert_allclose(norm["mean"], decoded.mean(axis=(0, 1, 2)), rtol=0, atol=1e-7)
            np.testing.assert_allclose(norm["std"], decoded.std(axis=(0, 1, 2)), rtol=0, atol=1e-7)

    def test_bad_folders_and_files_are_errors_naming_them(self):
        from PIL import Image
        root = os.path.join(self.dir, "root")
        for cls in ("cat", "dog"):
            os.makedirs(os.path.join(root, cls))
            for i in range(4):
                Image.new("RGB", (20, 16), (i * 60, 0, 0)).save(os.path.join(root, cls, f"{i}.png"))

        def fails(config, *needles):
            code, out = run(["train", config, "--run_dir", os.path.join(self.dir, "bad")])
            self.assertEqual(code, 2, out)
            for needle in needles:
                self.assertIn(needle, out)

        fails(mini_config(self.dir, os.path.join(self.dir, "nope")),
              f"data.train: image_folder root: file '{self.dir}/nope' does not exist")
        os.makedirs(os.path.join(root, "eel"))
        fails(mini_config(self.dir, root),
              f"data.train: image_folder: class folder 'eel' of '{root}' holds no .png, .jpg or "
              ".jpeg image")
        os.rmdir(os.path.join(root, "eel"))
        # Found when read, in a loader thread: the file and libpng's reason.
        with open(os.path.join(root, "dog", "2.png"), "r+b") as f:
            f.truncate(40)
        fails(mini_config(self.dir, root),
              f"image_folder: '{root}/dog/2.png': not a valid PNG file (libpng: ")
        Image.new("RGB", (24, 16)).save(os.path.join(root, "dog", "2.png"))
        fails(mini_config(self.dir, root),
              "image_folder: images of different sizes in one batch:", "give image_folder a size")
        # ... which `size` fixes.
        code, out = run(["train", mini_config(self.dir, root), "--data.train.args.size", "[16, 20]",
                         "--run_dir", os.path.join(self.dir, "sized")])
        self.assertEqual(code, 0, out)
        with open(os.path.join(self.dir, "sized", "classes.json")) as f:
            self.assertEqual(json.load(f)["classes"], ["cat", "dog"])

    def test_sigterm_while_the_data_does_not_come_ends_the_run_after_a_grace(self):
        """Files that stop answering mid-run (each image replaced by a FIFO nobody writes: the
        reader blocks in open): SIGTERM is answered at once and, no data coming, the process
        ends with the resumable exit code, saying that it saved nothing."""
        import numpy as np
        from PIL import Image
        root = os.path.join(self.dir, "fifo")
        paths = []
        for i in range(24):
            path = os.path.join(root, "ab"[i % 2], f"{i}.png")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            Image.fromarray(np.full((16, 20, 3), i * 10, np.uint8)).save(path)
            paths.append(path)
        log = os.path.join(self.dir, "fifo.log")
        with open(log, "w") as out:
            p = subprocess.Popen(
                [common.BIN, "train", mini_config(self.dir, root), "--run_dir",
                 os.path.join(self.dir, "run-fifo"), "--data.loader.workers", "0",
                 "--train.max_length", "50 epochs", "--train.log_every", "1 step",
                 "--checkpoint.every", "null"]
                + common.slow_steps(100), stdout=out, stderr=subprocess.STDOUT)
        try:
            def text():
                with open(log) as f:
                    return f.read()
            self.assertTrue(common.wait_for(lambda: "step 2 |" in text() or p.poll() is not None,
                                            120), text())
            for path in paths:
                os.remove(path)
                os.mkfifo(path)
            time.sleep(2)  # the batch in flight ends; the next read blocks
            p.send_signal(signal.SIGTERM)
            self.assertEqual(p.wait(timeout=60), 75, text())
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertRegex(text(), r"SIGTERM while waiting for data for step \d+: the run saves")
        self.assertRegex(text(), r"SIGTERM and no data for step \d+ within 10 s .*ending the "
                                 r"process without a checkpoint")


if __name__ == "__main__":
    common.main()
