"""Training from NumPy and HDF5 files written by Debian's python3-numpy and python3-h5py: the same
digits as examples/digits/mlp.yaml's CSV, so the same seed gives the same metrics from every format."""
import os
import re
import signal
import subprocess
import common
from common import run, write, read_jsonl


def metrics(run_dir):
    return [{k: v for k, v in e.items() if k != "time"}
            for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl"))]


class ArrayData(common.Case):
    def setUp(self):
        super().setUp()
        import h5py
        import numpy as np
        table = np.loadtxt(common.DIGITS, delimiter=",", dtype=np.int64)
        x, y = table[:, :64], table[:, 64]
        # Types the config converts back: uint8 pixels, big-endian float64 in HDF5, int16 labels.
        np.savez_compressed(os.path.join(self.dir, "digits.npz"), pixels=x.astype(np.uint8),
                            labels=y)
        half = len(y) // 2
        for name, rows in (("a.h5", slice(0, half)), ("b.h5", slice(half, None))):
            with h5py.File(os.path.join(self.dir, name), "w") as f:
                f.create_dataset("images/pixels", data=x[rows].astype(">f8"), chunks=(64, 64))
                f["labels"] = y[rows].astype(np.int16)
        with open(os.path.join(common.SOURCE, "examples/digits/mlp.yaml")) as f:
            self.example = f.read()

    def config_with_train(self, name, train):
        """examples/digits/mlp.yaml with `train` in place of its CSV dataset, for 3 epochs."""
        text, count = re.subn(r"  train:\n    type: csv\n    args: \{[^\n]*\}\n",
                              "  train: " + train + "\n", self.example)
        self.assertEqual(count, 1, "examples/digits/mlp.yaml's data.train changed shape")
        return write(os.path.join(self.dir, name + ".yaml"),
                     text.replace("max_length: 20 epochs", "max_length: 3 epochs"))

    def train(self, config, name):
        run_dir = os.path.join(self.dir, name)
        # One thread: `threads: auto` follows the machine's load, and another count of threads
        # sums in another order (the last bits of the metrics compared).
        code, out = run(["train", config, "--run_dir", run_dir, "--train.threads", "1"],
                        cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        return metrics(run_dir)

    def test_npz_and_hdf5_train_as_the_csv_does(self):
        csv = self.train(self.config_with_train("csv", "{type: csv, args: {path: " + common.DIGITS +
                                                ", header: false, target: '64'}}"), "csv")
        npz = self.train(self.config_with_train(
            "npz", "{type: npz, args: {path: " + os.path.join(self.dir, "digits.npz") +
            ", arrays: {x: pixels, y: labels}, dtypes: {x: float32}}}"), "npz")
        hdf5 = self.train(self.config_with_train(
            "hdf5", "{type: hdf5, args: {paths: [" + os.path.join(self.dir, "a.h5") + ", " +
            os.path.join(self.dir, "b.h5") + "], datasets: {x: /images/pixels, y: /labels}, "
            "dtypes: {x: float32}}}"), "hdf5")
        self.assertGreater(csv[-1]["val/acc"], 0.8)
        self.assertEqual(npz, csv)
        self.assertEqual(hdf5, csv)

    def test_float64_features_train_as_float32_and_the_log_says_so(self):
        import numpy as np
        table = np.loadtxt(common.DIGITS, delimiter=",", dtype=np.int64)
        path = os.path.join(self.dir, "f64.npz")
        np.savez(path, x=table[:, :64].astype(np.float64), y=table[:, 64])  # numpy's default
        config = self.config_with_train("f64", "{type: npz, args: {path: " + path + "}}")
        run_dir = os.path.join(self.dir, "f64")
        code, out = run(["train", config, "--run_dir", run_dir, "--train.max_length", "5 steps"],
                        cwd=common.SOURCE)
        self.assertEqual(code, 0, out)
        self.assertEqual(out.count("(key x) is float64; read as float32"), 1, out)
        self.assertIn("set dtypes: {x: float64}", out)
        self.assertNotIn("(key y)", out)  # integer targets stay as they are

    def test_a_missing_array_is_named(self):
        code, out = run(["train", self.config_with_train(
            "bad", "{type: npz, args: {path: " + os.path.join(self.dir, "digits.npz") +
            ", arrays: {x: pixel, y: labels}}}"), "--run_dir", os.path.join(self.dir, "bad")])
        self.assertEqual(code, 2, out)
        self.assertIn("has no array 'pixel' (arrays.x) (did you mean 'pixels'?); it holds: "
                      "pixels, labels", out)

    def test_npy_shards_train_as_one_file_and_resume_exactly_after_kill_9(self):
        import numpy as np
        table = np.loadtxt(common.DIGITS, delimiter=",", dtype=np.int64)
        x, y = table[:, :64].astype(np.float32), table[:, 64]
        np.save(os.path.join(self.dir, "x.npy"), x)
        np.save(os.path.join(self.dir, "y.npy"), y)
        cuts = [0, 500, 501, 1300, len(y)]  # uneven, one shard of a single row
        for i in range(len(cuts) - 1):
            rows = slice(cuts[i], cuts[i + 1])
            np.save(os.path.join(self.dir, f"x_{i:02}.npy"), x[rows])
            np.save(os.path.join(self.dir, f"y_{i:02}.npy"), y[rows])
        # Every run pauses 250 ms a step (time for a kill between saves), so all share a config;
        # one thread, as threads: auto follows the machine's load and with it float sums' order.
        steps = ["--train.max_length", "12 steps", "--train.log_every", "2 steps",
                 "--train.val_every", "6 steps", "--checkpoint.every", "4 steps",
                 "--train.threads", "1"]
        steps += common.slow_steps(250)

        def config(name, x_files, y_files):
            return self.config_with_train(name, "{type: npy, args: {arrays: {x: '" +
                                          os.path.join(self.dir, x_files) + "', y: '" +
                                          os.path.join(self.dir, y_files) +
                                          "'}, num_classes: 10}}")

        one = config("one", "x.npy", "y.npy")
        sharded = config("sharded", "x_*.npy", "y_*.npy")
        run_dirs = {name: os.path.join(self.dir, name) for name in ("one", "whole", "killed")}
        for name, cfg in (("one", one), ("whole", sharded)):
            code, out = run(["train", cfg, "--run_dir", run_dirs[name]] + steps)
            self.assertEqual(code, 0, out)
        self.assertIn("1438 train, 359 val", out)  # the example's validation_ratio: 0.2
        # The shuffled order and the split are the one file's: the same metrics, step by step.
        self.assertEqual(metrics(run_dirs["whole"]), metrics(run_dirs["one"]))
        whole = self.final_weights(run_dirs["whole"], "--plugin", common.test_plugin())

        killed = ["train", sharded, "--run_dir", run_dirs["killed"]] + steps
        p = subprocess.Popen([common.BIN] + killed,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        step8 = os.path.join(run_dirs["killed"], "checkpoints", "step-8", "MANIFEST.json")
        self.assertTrue(common.wait_for(lambda: os.path.exists(step8)))
        p.send_signal(signal.SIGKILL)
        p.wait()
        code, out = run(killed)
        self.assertEqual(code, 0, out)
        self.assertIn("resumed from " + os.path.join(run_dirs["killed"], "checkpoints", "step-"),
                      out)
        resumed = self.final_weights(run_dirs["killed"], "--plugin", common.test_plugin())
        import torch
        self.assertEqual(list(whole), list(resumed))
        for k in whole:
            self.assertTrue(torch.equal(whole[k], resumed[k]), k)  # exact resume: bitwise

    def test_labels_beyond_a_declared_num_classes_are_named(self):
        import numpy as np
        np.save(os.path.join(self.dir, "x.npy"), np.zeros((100, 64), np.float32))
        np.save(os.path.join(self.dir, "y.npy"), np.arange(100) % 12)
        code, out = run(["train", self.config_with_train(
            "labels", "{type: npy, args: {arrays: {x: " + os.path.join(self.dir, "x.npy") +
            ", y: " + os.path.join(self.dir, "y.npy") + "}, num_classes: 10}}"),
            "--run_dir", os.path.join(self.dir, "labels")])
        self.assertEqual(code, 2, out)
        self.assertIn("y.npy' row ", out)
        self.assertIn("(key y) holds label 1", out)
        self.assertIn("not in [0, num_classes = 10)", out)


if __name__ == "__main__":
    common.main()
