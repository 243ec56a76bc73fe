"""`unitrain init` writes a starter config that `unitrain train` runs as written, per task."""
import math
import os
import subprocess
import time
import common
from common import run, read_jsonl, write

SKLEARN = os.path.dirname(common.DIGITS)
# scikit-learn's one regression CSV with features and target in one file: a line of counts, a
# header, 13 feature columns, then the price MEDV. (diabetes keeps X and y in two files.)
BOSTON = os.path.join(SKLEARN, "boston_house_prices.csv")
FASHION_IMAGES = os.path.join(common.FASHION, "train-images-idx3-ubyte.gz")
MOBY_DICK = os.path.join(common.SOURCE, "examples/data/generated/moby_dick.txt")


def values(events, key):
    return [e[key] for e in events if key in e]


class Init(common.Case):
    def init(self, *args, cwd=None):
        out = os.path.join(self.dir, "run.yaml")
        code, log = run(["init", "--out", out] + list(args), cwd=cwd)
        self.assertEqual(code, 0, log)
        self.assertIn("wrote " + out, log)
        with open(out) as f:
            return out, f.read()

    def train(self, config):
        run_dir = os.path.join(self.dir, "run")
        start = time.time()
        code, out = run(["train", config, "--run_dir", run_dir])
        seconds = time.time() - start
        self.assertEqual(code, 0, out)
        print("\n  trained in %.1f s" % seconds)
        events = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
        self.assertTrue(events, out)
        return events

    def test_classification_on_digits(self):
        config, text = self.init("--task", "classification", "--data", common.DIGITS)
        self.assertIn('target: "64"', text)       # no header: the last column by index
        self.assertIn("sizes: [64, 128, 10]", text)  # 64 inputs, 10 classes, from the data
        self.assertIn("header: false", text)
        events = self.train(config)
        self.assertGreater(values(events, "val/acc")[-1], 0.8, events)  # chance: 0.1

    def test_classification_without_data_uses_the_packaged_digits_and_says_so(self):
        config, text = self.init(cwd=self.dir)
        self.assertIn(common.DIGITS, text)
        self.assertIn("# Data: scikit-learn's handwritten digits", text)
        self.assertIn("unitrain init --data FILE", text)

    def test_classification_of_class_names_as_training_takes_them(self):
        # scikit-learn's iris with the species named in the target column, as users' CSVs are.
        names = ["setosa", "versicolor", "virginica"]
        with open(os.path.join(SKLEARN, "iris.csv")) as f:
            rows = [l.strip().split(",") for l in f.read().split("\n")[1:] if l.strip()]
        pets = write(os.path.join(self.dir, "iris-named.csv"),
                     "sl,sw,pl,pw,species\n" + "".join(
                         ",".join(r[:4] + [names[int(r[4])]]) + "\n" for r in rows))
        config, text = self.init("--task", "classification", "--data", pets, "--target", "species")
        self.assertIn('target: "species"', text)
        self.assertIn("3 classes", text)
        events = self.train(config)
        self.assertTrue(values(events, "val/acc"), events)

    def test_regression_on_boston_house_prices(self):
        config, text = self.init("--task", "regression", "--data", BOSTON)
        self.assertIn('target: "MEDV"', text)
        self.assertIn("skip_rows: 1", text)  # the line of counts before the header
        self.assertIn("sizes: [13, 128, 1]", text)
        events = self.train(config)
        mae = values(events, "val/mae")
        self.assertTrue(all(math.isfinite(v) for v in mae), mae)
        self.assertLess(mae[-1], 5.0, mae)  # MEDV: mean 22.5, std 9.2; predicting the mean: 6.6

    def test_image_on_fashion_mnist(self):
        config, text = self.init("--task", "image", "--data", FASHION_IMAGES)
        self.assertIn("image_size: [28, 28]", text)
        self.assertIn("train-labels-idx1-ubyte.gz", text)
        events = self.train(config)
        self.assertGreater(values(events, "val/acc")[-1], 0.5, events)  # chance: 0.1

    def test_language_model_on_moby_dick(self):
        if not os.path.exists(MOBY_DICK):
            subprocess.run([os.path.join(common.SOURCE, "examples/moby_dick/prepare.sh")],
                           check=True, timeout=600)
        config, text = self.init("--task", "language-model", "--data", MOBY_DICK)
        self.assertIn("vocab: 85", text)  # the book's distinct bytes
        events = self.train(config)
        losses = values(events, "train/loss")
        self.assertLess(losses[-1], losses[0] - 1.0, losses)
        self.assertTrue(values(events, "val/ppl"), events)

    def test_never_overwrites_a_file(self):
        out = write(os.path.join(self.dir, "mine.yaml"), "name: keep me\n")
        code, log = run(["init", "--out", out])
        self.assertEqual(code, 2, log)
        self.assertIn("already exists", log)
        with open(out) as f:
            self.assertEqual(f.read(), "name: keep me\n")

    def test_bad_task_and_target_are_named(self):
        code, log = run(["init", "--task", "clasification", "--out", os.path.join(self.dir, "a.yaml")])
        self.assertEqual(code, 2, log)
        self.assertIn("did you mean 'classification'", log)
        code, log = run(["init", "--data", BOSTON, "--target", "MEDVV",
                         "--out", os.path.join(self.dir, "b.yaml")])
        self.assertEqual(code, 2, log)
        self.assertIn("did you mean 'MEDV'", log)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "b.yaml")))


if __name__ == "__main__":
    common.main()
