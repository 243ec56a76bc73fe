"""The demo: the CNN on Fashion-MNIST reaches at least 0.88 test accuracy (scripts/demo's config)."""
import os
import re
import common
from common import run


class Demo(common.Case):
    def test_fashion_mnist_cnn_reaches_088(self):
        run_dir = os.path.join(self.dir, "fashion")
        code, out = run(["train", "examples/fashion_mnist/cnn.yaml", "--run_dir", run_dir],
                        cwd=common.SOURCE, timeout=1700)
        self.assertEqual(code, 0, out)
        m = re.search(r"test/acc ([0-9.]+)", out)
        self.assertIsNotNone(m, out)
        self.assertGreaterEqual(float(m.group(1)), 0.88, out)


if __name__ == "__main__":
    common.main()
